// `hetrun run --plan FILE` (docs/how-to/pipelines.md): the plan's stages take the local
// workers in order, and every worker gets its stage and the layout file (HETRUN_PLAN).
#include <gtest/gtest.h>

#include "hetrun/pipeline/job_layout.h"
#include "run_harness.h"

namespace hetrun {
namespace {

using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::TempDir;

// `hetrun plan --json` output, trimmed to what --plan reads: 2 replicas of layers 0-1, one of 2.
constexpr const char* kPlan = R"({
  "layers": 3, "micro_batches": 2, "layer_names": ["embedding", "block.0", "head"],
  "stages": [{"stage": 0, "family": "ampere", "first_layer": 0, "layers": 2, "replicas": 2},
             {"stage": 1, "family": "hopper", "first_layer": 2, "layers": 1}]})";

std::vector<std::string> PlanRun(int nproc, const std::string& plan, const std::string& script) {
  return {"run",
          "--nproc-per-node",
          std::to_string(nproc),
          "--prefix-ranks",
          "--plan",
          plan,
          "--",
          "/bin/sh",
          "-c",
          script};
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(RunPlanTest, EachWorkerGetsItsStageAndTheLayoutFile) {
  TempDir dir;
  std::string plan = dir.WriteFile("plan.json", kPlan);
  HetrunProcess run(PlanRun(3, plan,
                            "echo stage=$HETRUN_STAGE layers=$HETRUN_STAGE_LAYERS; "
                            "cp \"$HETRUN_PLAN\" " +
                                dir.path() + "/layout.$RANK.json"),
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  for (const char* line : {"[rank 0] stage=0 layers=0:2", "[rank 1] stage=0 layers=0:2",
                           "[rank 2] stage=1 layers=2:1"}) {
    EXPECT_TRUE(Contains(run.out(), line)) << line << "\n" << run.out();
  }
  Result<pipeline::JobLayout> layout = pipeline::LoadJobLayout(dir.path() + "/layout.2.json");
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->stages[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(layout->stages[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(layout->stages[1].families, (std::vector<std::string>{"hopper"}));
  EXPECT_EQ(layout->micro_batches, 2);
  EXPECT_EQ(layout->layer_names[2], "head");
}

TEST(RunPlanTest, AReplicaCountThatDoesNotMatchTheWorkersExits78NamingBoth) {
  TempDir dir;
  std::string plan = dir.WriteFile("plan.json", kPlan);
  HetrunProcess run(PlanRun(2, plan, "exit 0"), HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 78);
  EXPECT_TRUE(Contains(run.err(), "stages hold 3 replicas in all, but the job has 2 ranks"))
      << run.err();
}

TEST(RunPlanTest, APlanWithAGapOrAStageWithoutRanksExits78) {
  TempDir dir;
  std::string gap =
      dir.WriteFile("gap.json", R"({"layers": 3, "stages": [{"first_layer": 0, "layers": 1},
                                               {"first_layer": 2, "layers": 1}]})");
  HetrunProcess gap_run(PlanRun(2, gap, "exit 0"), HetrunEnv(dir.path()), dir.path(), "gap");
  EXPECT_EQ(gap_run.Wait(), 78);
  EXPECT_TRUE(Contains(gap_run.err(), "stage 1 starts at layer 2 but stage 0 ends before layer 1"))
      << gap_run.err();
  std::string empty = dir.WriteFile(
      "empty.json", R"({"layers": 2, "stages": [{"first_layer": 0, "layers": 1, "replicas": 0},
                                                 {"first_layer": 1, "layers": 1}]})");
  HetrunProcess empty_run(PlanRun(1, empty, "exit 0"), HetrunEnv(dir.path()), dir.path(), "empty");
  EXPECT_EQ(empty_run.Wait(), 78);
  EXPECT_TRUE(Contains(empty_run.err(), "a stage without ranks")) << empty_run.err();
}

}  // namespace
}  // namespace hetrun

namespace hetrun {
namespace {

// --model-layers (issue 29 item 6): hetrun checks the layout against the model's declared layer
// count before any worker starts.
TEST(RunPlanModelLayersTest, ALayoutOfAnotherLayerCountExits78BeforeAnyWorker) {
  TempDir dir;
  std::string plan = dir.WriteFile("plan.json", kPlan);
  std::vector<std::string> args = PlanRun(3, plan, "echo started");
  args.insert(args.begin() + 1, {"--model-layers", "4"});
  HetrunProcess run(args, HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 78) << run.err();
  EXPECT_TRUE(Contains(run.err(),
                       "the pipeline layout has 3 layers (split 2,1, revision 0), the "
                       "model 4 (--model-layers, HETRUN_MODEL_LAYERS)"))
      << run.err();
  EXPECT_FALSE(Contains(run.out(), "started")) << run.out();
}

TEST(RunPlanModelLayersTest, TheSameLayerCountStartsTheWorkers) {
  TempDir dir;
  std::string plan = dir.WriteFile("plan.json", kPlan);
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["HETRUN_MODEL_LAYERS"] = "3";
  HetrunProcess run(PlanRun(3, plan, "echo started"), env, dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(Contains(run.out(), "started")) << run.out();
}

TEST(RunPlanModelLayersTest, ModelLayersWithoutALayoutOrOutOfRangeIsRefused) {
  TempDir dir;
  HetrunProcess none({"run", "--model-layers", "8", "--", "echo", "started"}, HetrunEnv(dir.path()),
                     dir.path());
  EXPECT_EQ(none.Wait(), 78) << none.err();
  EXPECT_TRUE(Contains(none.err(), "checks a pipeline layout, and this run has none"))
      << none.err();
  EXPECT_FALSE(Contains(none.out(), "started"));
  for (const char* bad : {"0", "x", "5000"}) {
    HetrunProcess run({"run", "--model-layers", bad, "--", "true"}, HetrunEnv(dir.path()),
                      dir.path());
    EXPECT_EQ(run.Wait(), 64) << bad << ": " << run.err();
    EXPECT_TRUE(Contains(run.err(), std::string("--model-layers '") + bad + "'")) << run.err();
  }
}

}  // namespace
}  // namespace hetrun

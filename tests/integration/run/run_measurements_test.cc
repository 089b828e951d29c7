// The end of a pipeline run's measurements (docs/reference/formats/measurements.md): real `hetrun
// run` launchers whose workers (worker_helper `measure`) write rank files through MeasurementLog;
// the launcher merges them, node 0 every node's, and copies the result to --measurements-out.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "free_port.h"
#include "hetrun/pipeline/measurements.h"
#include "run_harness.h"
#include "run_process.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::TempDir;

// Two stages of one replica each over three layers.
constexpr const char* kPlan = R"({
  "layers": 3, "micro_batches": 2, "layer_names": ["embedding", "block.0", "head"],
  "layer_costs": [1, 2, 1],
  "stages": [{"family": "ampere", "first_layer": 0, "layers": 2},
             {"family": "hopper", "first_layer": 2, "layers": 1}]})";

std::vector<std::string> MeasuredRun(const std::string& plan, const std::string& out,
                                     std::vector<std::string> steps) {
  std::vector<std::string> args = {
      "run", "--nproc-per-node",  "2", "--plan", plan, "--measurements-out", out,
      "--",  HETRUN_WORKER_HELPER};
  args.insert(args.end(), steps.begin(), steps.end());
  return args;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(RunMeasurementsTest, TheRanksFilesAreMergedAndCopiedOut) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  const std::string out = dir.path() + "/measurements.json";
  HetrunProcess run(MeasuredRun(plan, out, {"measure", "3"}), HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(120s), 0) << run.err();
  EXPECT_TRUE(Contains(run.err(), "measurements of 2 ranks (6 windows) written to " + out))
      << run.err();
  Result<pipeline::Measurements> merged = pipeline::LoadMeasurements(out);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->num_layers, 3);
  EXPECT_EQ(merged->layer_names[0], "embedding");
  ASSERT_EQ(merged->ranks.size(), 2u);
  EXPECT_EQ(merged->ranks[1].rank, 1);
  EXPECT_EQ(merged->ranks[1].stage, 1);
  EXPECT_EQ(merged->ranks[1].family, "hopper");
  ASSERT_EQ(merged->ranks[1].windows.size(), 3u);
  EXPECT_EQ(merged->ranks[1].windows[2].forward_ms, 2.0);
  EXPECT_EQ(merged->ranks[1].windows[2].first_layer, 2);
  std::vector<std::vector<pipeline::StageMeasurement>> windows =
      pipeline::StageWindows(*merged, nullptr);
  EXPECT_EQ(windows.size(), 3u);
}

TEST(RunMeasurementsTest, ACorruptRankFileIsLoggedAndSkipped) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  const std::string out = dir.path() + "/measurements.json";
  HetrunProcess run(MeasuredRun(plan, out, {"r0:measure", "2", "r1:badmeasure"}),
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(120s), 0) << run.err();
  EXPECT_TRUE(Contains(run.err(), "measurements: skipped ")) << run.err();
  EXPECT_TRUE(Contains(run.err(), "rank_1.json: not valid JSON")) << run.err();
  Result<pipeline::Measurements> merged = pipeline::LoadMeasurements(out);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_EQ(merged->ranks.size(), 1u);
  EXPECT_EQ(merged->ranks[0].rank, 0);
}

TEST(RunMeasurementsTest, NoMeasurementsWriteNoFile) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  const std::string out = dir.path() + "/measurements.json";
  HetrunProcess run(MeasuredRun(plan, out, {"exit", "0"}), HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(120s), 0) << run.err();
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(RunMeasurementsTest, AnOutputInAFolderThatDoesNotExistIsAUsageError) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  HetrunProcess run(MeasuredRun(plan, dir.path() + "/no/such/m.json", {"exit", "0"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(120s), 64) << run.err();
  EXPECT_TRUE(Contains(run.err(), "--measurements-out '" + dir.path() + "/no/such/m.json'"))
      << run.err();
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["HETRUN_MEASUREMENTS_OUT"] = dir.path();
  std::vector<std::string> args = {"run", "--nproc-per-node", "1", "--", "/bin/true"};
  HetrunProcess from_env(args, env, dir.path(), "env");
  EXPECT_EQ(from_env.Wait(120s), 78) << from_env.err();
  EXPECT_TRUE(Contains(
      from_env.err(), "HETRUN_MEASUREMENTS_OUT='" + dir.path() + "' (environment): is a directory"))
      << from_env.err();
}

TEST(RunMeasurementsTest, PlanMeasuredReplansFromARunAndItsJsonRunsAgain) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  const std::string out = dir.path() + "/measurements.json";
  HetrunProcess run(MeasuredRun(plan, out, {"measure", "3"}), HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(120s), 0) << run.err();
  HetrunProcess text({"plan", "--measured", out, "--plan", plan}, HetrunEnv(dir.path()), dir.path(),
                     "text");
  ASSERT_EQ(text.Wait(), 0) << text.err();
  // Rank 0 (stage 0, 2 layers) measured 3 ms, rank 1 (stage 1, 1 layer) 6 ms per micro-batch.
  EXPECT_TRUE(Contains(text.out(),
                       "measured split 2,1: predicted iteration 15.000 ms (measured "
                       "15.000 ms)"))
      << text.out();
  EXPECT_TRUE(Contains(text.out(), "hopper            3.17")) << text.out();
  const std::string replanned = dir.path() + "/replanned.json";
  HetrunProcess json({"plan", "--measured", out, "--plan", plan, "--json", "-o", replanned},
                     HetrunEnv(dir.path()), dir.path(), "json");
  ASSERT_EQ(json.Wait(), 0) << json.err();
  HetrunProcess again({"run", "--nproc-per-node", "2", "--plan", replanned, "--", "/bin/true"},
                      HetrunEnv(dir.path()), dir.path(), "again");
  EXPECT_EQ(again.Wait(120s), 0) << again.err();
}

TEST(RunMeasurementsTest, PlanMeasuredRefusesAnotherModelsOrNonFiniteFiguresWithExit78) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  const std::string window =
      R"({"window": 0, "first_layer": 0, "layers": 2, "forward_ms": 1, "backward_ms": 2})";
  const std::string other = dir.WriteFile(
      "other.json", R"({"num_layers": 5, "ranks": [{"rank": 0, "stage": 0, "windows": []}]})");
  HetrunProcess wrong({"plan", "--measured", other, "--plan", plan}, HetrunEnv(dir.path()),
                      dir.path(), "wrong");
  EXPECT_EQ(wrong.Wait(), 78) << wrong.err();
  EXPECT_TRUE(Contains(wrong.err(), other + ": $.num_layers: 5 layers, but the model has 3"))
      << wrong.err();
  std::string huge = window;
  huge.replace(huge.find("\"forward_ms\": 1"), 16, "\"forward_ms\": 1e999");
  const std::string infinite = dir.WriteFile(
      "inf.json",
      R"({"num_layers": 3, "ranks": [{"rank": 0, "stage": 0, "windows": [)" + huge + "]}]}");
  HetrunProcess inf({"plan", "--measured", infinite, "--plan", plan}, HetrunEnv(dir.path()),
                    dir.path(), "inf");
  EXPECT_EQ(inf.Wait(), 78) << inf.err();
  EXPECT_TRUE(Contains(inf.err(), infinite + ": not valid JSON")) << inf.err();
  EXPECT_TRUE(Contains(inf.err(), "number overflow")) << inf.err();
  const std::string empty = dir.WriteFile(
      "empty.json", R"({"num_layers": 3, "ranks": [{"rank": 0, "stage": 0, "windows": []},
                                                    {"rank": 1, "stage": 1, "windows": []}]})");
  HetrunProcess none({"plan", "--measured", empty, "--plan", plan}, HetrunEnv(dir.path()),
                     dir.path(), "none");
  EXPECT_EQ(none.Wait(), 78) << none.err();
  EXPECT_TRUE(Contains(none.err(), empty + ": $.ranks: no window in which every stage"))
      << none.err();
  HetrunProcess usage({"plan", "--measured", empty}, HetrunEnv(dir.path()), dir.path(), "usage");
  EXPECT_EQ(usage.Wait(), 64) << usage.err();
}

bool HaveRendezvousLibrary() {
  return std::filesystem::exists(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so");
}

TEST(RunMeasurementsTest, NodeZeroGathersEveryNodesMeasurements) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  const int port = testing::FreePort();
  const std::string gpus = "A100-SXM4-80GB:8.0:81049,A100-SXM4-80GB:8.0:81049";
  const char* stages[] = {"0:2", "2:1"};
  std::vector<testing::ProcessResult> results(2);
  std::vector<std::thread> threads;
  for (int node = 0; node < 2; ++node) {
    threads.emplace_back([&, node] {
      testing::ProcessOptions options;
      options.timeout = 120s;
      options.env = std::map<std::string, std::string>{{"PATH", std::getenv("PATH")},
                                                       {"HETRUN_FAKE_GPUS", gpus},
                                                       {"HETRUN_TERMINATION_LOG", "/dev/null"},
                                                       {"HETRUN_STAGE", std::to_string(node)},
                                                       {"HETRUN_STAGE_LAYERS", stages[node]}};
      results[node] = testing::RunProcess(
          {HETRUN_BINARY, "run", "--nnodes", "2", "--node-rank", std::to_string(node),
           "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port",
           std::to_string(port), "--measurements-out",
           dir.path() + "/m." + std::to_string(node) + ".json", "--", HETRUN_WORKER_HELPER,
           "measure", "2"},
          options);
    });
  }
  for (auto& t : threads) t.join();
  for (int node = 0; node < 2; ++node) {
    ASSERT_EQ(results[node].exit_code, 0) << "node " << node << ": " << results[node].err;
  }
  Result<pipeline::Measurements> all = pipeline::LoadMeasurements(dir.path() + "/m.0.json");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->ranks.size(), 4u) << results[0].err;
  EXPECT_EQ(all->ranks[3].rank, 3);
  EXPECT_EQ(all->ranks[3].stage, 1);
  EXPECT_EQ(pipeline::StageWindows(*all, nullptr).size(), 2u);
  Result<pipeline::Measurements> own = pipeline::LoadMeasurements(dir.path() + "/m.1.json");
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->ranks.size(), 2u);
}

}  // namespace
}  // namespace hetrun

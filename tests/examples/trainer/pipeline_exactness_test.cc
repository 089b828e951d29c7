// The pipeline's acceptance test (issue 18): examples/trainer run as pipeline stages under the
// real `hetrun run --plan` on CPU over Gloo matches the whole model trained in one process
// (--reference) — every step's loss (relative 1e-5) and every parameter after K AdamW steps
// (relative 1e-5 plus absolute 1e-7). In float64 (--double): the attention's key bias has a
// gradient that is exactly zero in exact arithmetic, so in float32 it is pure rounding noise of
// ~1e-9, which AdamW (eps 1e-8) turns into updates of ~lr; any change of summation order (a
// pipeline's micro-batches) then moves it by ~1e-4. In float64 the noise stays far below eps.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "free_port.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/measurements.h"
#include "run_process.h"
#include "summary_file.h"

namespace hetrun {
namespace {

using testing::FreePort;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::ReadSummary;
using testing::RunProcess;
using testing::TempDir;

// A tiny model: embedding, 4 blocks, head = 6 pipeline layers; 3 AdamW steps unless a test
// says otherwise.
const std::vector<std::string> kModel = {"--layers", "4", "--seq", "8", "--dim", "16", "--double"};

ProcessOptions Options(const TempDir& dir) {
  return testing::IsolatedIn(dir, std::chrono::seconds(280));
}

std::vector<double> Numbers(std::istream& in, char separator) {
  std::vector<double> out;
  for (std::string item; std::getline(in, item, separator);) {
    if (!item.empty()) out.push_back(std::stod(item));
  }
  return out;
}

std::vector<double> Losses(const std::string& summary) {
  std::stringstream in(ReadSummary(summary)["losses"]);
  return Numbers(in, ',');
}

std::vector<double> Layer(const std::string& dir, const std::string& name) {
  std::ifstream in(dir + "/" + name + ".txt");
  return Numbers(in, '\n');
}

struct PipelineRun {
  int steps = 3;
  std::vector<std::string> flags;  ///< the pipeline's extra trainer flags
  std::string wrap;  ///< a /bin/sh prelude run before the trainer in each worker (e.g. exports)
};

// Runs the trainer whole (--reference) and as the pipeline of `plan` over `workers` processes;
// compares losses and parameters. Returns the pipeline's summary.
std::map<std::string, std::string> ExpectPipelineMatchesReference(const std::string& plan,
                                                                  int workers, int batch,
                                                                  const PipelineRun& run = {}) {
  TempDir dir;
  const std::string plan_file = dir.WriteFile("plan.json", plan);
  const std::string ref_dir = dir.path() + "/ref", pipe_dir = dir.path() + "/pipe";
  EXPECT_EQ(std::system(("mkdir -p " + ref_dir + " " + pipe_dir).c_str()), 0);
  std::vector<std::string> common = kModel;
  for (const std::string& flag : {std::string("--batch"), std::to_string(batch),
                                  std::string("--steps"), std::to_string(run.steps)}) {
    common.push_back(flag);
  }
  std::vector<std::string> ref = {HETRUN_TRAINER,  "--reference",
                                  "--summary",     dir.path() + "/ref.summary",
                                  "--save-params", ref_dir};
  ref.insert(ref.end(), common.begin(), common.end());
  ProcessResult r = RunProcess(ref, Options(dir));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  if (r.exit_code != 0) return {};
  std::vector<std::string> pipe = {HETRUN_BINARY,
                                   "run",
                                   "--nproc-per-node",
                                   std::to_string(workers),
                                   "--master-port",
                                   std::to_string(FreePort()),
                                   "--plan",
                                   plan_file,
                                   "--",
                                   HETRUN_TRAINER,
                                   "--summary",
                                   dir.path() + "/pipe.summary",
                                   "--save-params",
                                   pipe_dir};
  pipe.insert(pipe.end(), common.begin(), common.end());
  pipe.insert(pipe.end(), run.flags.begin(), run.flags.end());
  if (!run.wrap.empty()) {  // /bin/sh -c 'PRELUDE; exec "$@"' sh TRAINER ARGS...
    pipe.insert(pipe.begin() + 9, {"/bin/sh", "-c", run.wrap + "; exec \"$@\"", "sh"});
  }
  ProcessResult p = RunProcess(pipe, Options(dir));
  EXPECT_FALSE(p.timed_out) << p.out << p.err;
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  if (p.timed_out || p.exit_code != 0) return {};
  std::map<std::string, std::string> summary = ReadSummary(dir.path() + "/pipe.summary");
  std::printf("final shares per stage: %s\n", summary["shares"].c_str());
  std::vector<double> want = Losses(dir.path() + "/ref.summary");
  std::vector<double> got = Losses(dir.path() + "/pipe.summary");
  EXPECT_EQ(want.size(), static_cast<size_t>(run.steps));
  EXPECT_EQ(got.size(), want.size()) << p.out;
  if (got.size() != want.size()) return summary;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << "step " << i;
  }
  for (const char* name : {"embedding", "block.0", "block.1", "block.2", "block.3", "head"}) {
    std::vector<double> a = Layer(ref_dir, name), b = Layer(pipe_dir, name);
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a.size(), b.size()) << name;
    if (a.empty() || a.size() != b.size()) continue;
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::abs(b[i] - a[i]) > 1e-7 + 1e-5 * std::abs(a[i]) && ++bad <= 3) {
        ADD_FAILURE() << name << "[" << i << "]: pipeline " << b[i] << ", reference " << a[i];
      }
    }
    EXPECT_EQ(bad, 0) << name;
  }
  std::printf("%s", p.out.c_str());
  return summary;
}

TEST(PipelineExactnessTest, ThreeStagesOfTwoOneAndThreeReplicasWithUnequalSharesMatch) {
  ExpectPipelineMatchesReference(R"({"layers": 6, "micro_batches": 4, "stages": [
      {"first_layer": 0, "layers": 2, "replicas": 2, "shares": [1, 2]},
      {"first_layer": 2, "layers": 2},
      {"first_layer": 4, "layers": 2, "replicas": 3, "shares": [3, 1, 2]}]})",
                                 6, 24);
}

// Also the per-stage tuner at its most eager (a window per step, no warm-up): the shares may move
// every step, and every step must still be exact.
TEST(PipelineExactnessTest, MicroBatchesThatDoNotDivideTheBatchMatchWhileStagesTune) {
  ExpectPipelineMatchesReference(R"({"layers": 6, "micro_batches": 4, "schedule": "gpipe",
      "stages": [{"first_layer": 0, "layers": 2, "replicas": 2, "shares": [1, 2]},
                 {"first_layer": 2, "layers": 2},
                 {"first_layer": 4, "layers": 2, "replicas": 3, "shares": [3, 1, 2]}]})",
                                 6, 23, PipelineRun{3, {"--window", "1", "--warmup", "0"}, ""});
}

TEST(PipelineExactnessTest, SixStagesOfOneReplicaMatch) {
  std::string stages;
  for (int s = 0; s < 6; ++s) {
    stages += (s ? "," : "") + std::string(R"({"first_layer": )") + std::to_string(s) +
              R"(, "layers": 1})";
  }
  ExpectPipelineMatchesReference(R"({"layers": 6, "micro_batches": 4, "stages": [)" + stages + "]}",
                                 6, 24);
}

TEST(PipelineExactnessTest, AStageThatDiesMidScheduleStopsItsPartners) {
  // Rank 2 (the middle stage) is killed (SIGKILL) 4 s into a long run; its partners wait on
  // its sends and receives. hetrun stops them and exits with the dead worker's status.
  TempDir dir;
  const std::string plan =
      dir.WriteFile("plan.json", R"({"layers": 6, "micro_batches": 4, "stages": [
      {"first_layer": 0, "layers": 2, "replicas": 2}, {"first_layer": 2, "layers": 2},
      {"first_layer": 4, "layers": 2}]})");
  std::string trainer = std::string(HETRUN_TRAINER) + " --layers 4 --seq 8 --dim 16 --steps 100000";
  ProcessResult r = RunProcess({HETRUN_BINARY, "run", "--nproc-per-node", "4", "--master-port",
                                std::to_string(FreePort()), "--plan", plan, "--", "/bin/sh", "-c",
                                "if [ \"$RANK\" = 2 ]; then exec timeout -s KILL 4 " + trainer +
                                    "; else exec " + trainer + "; fi"},
                               Options(dir));
  ASSERT_FALSE(r.timed_out) << "a dead stage left its partners hanging\n" << r.err;
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rank 2"), std::string::npos) << r.err;
}

TEST(PipelineExactnessTest, APlanThatDoesNotMatchTheModelExits78NamingBoth) {
  TempDir dir;
  std::string layout =
      dir.WriteFile("layout.json", R"({"num_layers": 5, "stages": [{"first_layer": 0, "layers": 5,
                                                       "ranks": [0]}]})");
  ProcessOptions options = Options(dir);
  (*options.env)["HETRUN_PLAN"] = layout;
  std::vector<std::string> argv = {HETRUN_TRAINER};
  argv.insert(argv.end(), kModel.begin(), kModel.end());
  ProcessResult r = RunProcess(argv, options);
  EXPECT_EQ(r.exit_code, 78) << r.out << r.err;
  EXPECT_NE(r.err.find("the plan has 5 layers but the model has 6 (embedding, --layers 4 blocks, "
                       "head)"),
            std::string::npos)
      << r.err;
}

// Live layer moves (docs/how-to/cpp-pipelines.md): three stages of 2, 1 and 2 replicas start from a
// bad split and are moved by --force-split after steps 0, 1 and 2: layers 1 (stage 1 -> 0), 2 and
// 3 (stage 2 -> 0, across two stages) and 4 (2 -> 1) move back; then 1, 2 (0 -> 1), 3 (0 -> 2)
// and 4 (1 -> 2) move forward; then 1 moves back again. Every step's loss and the final
// parameters (saved from the final split) match the single process.
TEST(LiveMovesTest, ForcedMovesBackForwardAndAcrossTwoStagesMatchTheReference) {
  std::map<std::string, std::string> summary = ExpectPipelineMatchesReference(
      R"({"layers": 6, "micro_batches": 4, "stages": [
          {"first_layer": 0, "layers": 1, "replicas": 2, "shares": [1, 2]},
          {"first_layer": 1, "layers": 1},
          {"first_layer": 2, "layers": 4, "replicas": 2}]})",
      5, 24,
      PipelineRun{5,
                  {"--no-rebalance", "--force-split", "0:4,1,1", "--force-split", "1:1,2,3",
                   "--force-split", "2:2,1,3"},
                  ""});
  EXPECT_EQ(summary["split_first"], "1,1,4");
  EXPECT_EQ(summary["split_final"], "2,1,3");
  EXPECT_EQ(summary["moves"], "3");
  EXPECT_EQ(summary["layout_revision"], "3");
  EXPECT_EQ(std::count(summary["move_pause_ms"].begin(), summary["move_pause_ms"].end(), ','), 2);
  EXPECT_GT(std::stoll(summary["move_bytes"]), 0);
}

// The automatic decision: stage 0 (embedding and two blocks) runs 8 times slower (emulated), so
// the measured stage times make the re-balancer move its layers to stage 1; the steps before,
// during and after the moves still match the single process. 24 steps give 11 windows: the
// re-balancer decides from its third window on and confirms a new split over two.
TEST(LiveMovesTest, AutomaticMovesAwayFromASlowStageMatchTheReference) {
  std::map<std::string, std::string> summary = ExpectPipelineMatchesReference(
      R"({"layers": 6, "micro_batches": 2, "stages": [
          {"first_layer": 0, "layers": 3}, {"first_layer": 3, "layers": 3}]})",
      2, 8,
      PipelineRun{24,
                  {"--window", "2", "--warmup", "1", "--no-tune"},
                  "if [ \"$HETRUN_STAGE\" = 0 ]; then export HETRUN_EMULATE_SLOWDOWN=8; fi"});
  EXPECT_EQ(summary["split_first"], "3,3");
  ASSERT_FALSE(summary["split_final"].empty());
  EXPECT_LT(std::stoi(summary["split_final"]), 3) << "stage 0 kept its layers";
  EXPECT_GE(std::stoi(summary["moves"]), 1);
  EXPECT_EQ(summary["layout_revision"], summary["moves"]);
}

// After a move the layout file holds the new split (revision 1); a restart (--max-restarts)
// reads it, so the second attempt starts from the moved split, not the planned one.
TEST(LiveMovesTest, ARestartAfterAMoveResumesFromTheRewrittenLayout) {
  TempDir dir;
  const std::string plan =
      dir.WriteFile("plan.json", R"({"layers": 6, "micro_batches": 2, "stages": [
      {"first_layer": 0, "layers": 1, "replicas": 2}, {"first_layer": 1, "layers": 5}]})");
  std::string trainer =
      std::string(HETRUN_TRAINER) +
      " --layers 4 --seq 8 --dim 16 --batch 8 --steps 3 --no-rebalance --window 1 --warmup 0";
  // First attempt: a move after step 0, then every worker exits 75 (a transient failure) so
  // hetrun restarts the group; second attempt: rank 0 keeps the layout file it was given.
  std::string script = "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then " + trainer +
                       " --force-split 0:3,3 || exit $?; exit 75; fi; "
                       "if [ \"$RANK\" = 0 ]; then cp \"$HETRUN_PLAN\" " +
                       dir.path() + "/seen.json; echo \"$HETRUN_STAGE_LAYERS\" > " + dir.path() +
                       "/stage_layers; fi; exec " + trainer + " --summary " + dir.path() +
                       "/second.summary";
  ProcessResult r =
      RunProcess({HETRUN_BINARY, "run", "--nproc-per-node", "3", "--max-restarts", "1",
                  "--master-port", std::to_string(FreePort()), "--plan", plan, "--measurements-out",
                  dir.path() + "/measurements.json", "--", "/bin/sh", "-c", script},
                 Options(dir));
  ASSERT_FALSE(r.timed_out) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Result<pipeline::JobLayout> seen = pipeline::LoadJobLayout(dir.path() + "/seen.json");
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ(seen->revision, 1);
  ASSERT_EQ(seen->stages.size(), 2u);
  EXPECT_EQ(seen->stages[0].layers, 3);
  EXPECT_EQ(seen->stages[1].layers, 3);
  std::map<std::string, std::string> second = ReadSummary(dir.path() + "/second.summary");
  EXPECT_EQ(second["split_first"], "3,3");
  EXPECT_EQ(second["split_final"], "3,3");
  EXPECT_EQ(second["layout_revision"], "1");
  std::ifstream stage_layers(dir.path() + "/stage_layers");
  std::string first_stage;
  std::getline(stage_layers, first_stage);
  EXPECT_EQ(first_stage, "0:3") << "HETRUN_STAGE_LAYERS of the restarted rank 0";
  // Both attempts' windows reach measurements.json: the restarted workers continued their rank
  // files instead of starting them over.
  Result<pipeline::Measurements> measured =
      pipeline::LoadMeasurements(dir.path() + "/measurements.json");
  ASSERT_TRUE(measured.ok()) << measured.status().ToString() << r.err;
  ASSERT_EQ(measured->ranks.size(), 3u);
  for (const pipeline::RankMeasurements& rank : measured->ranks) {
    std::set<int64_t> attempts;
    for (const pipeline::WindowMeasurement& w : rank.windows) attempts.insert(w.attempt);
    EXPECT_EQ(attempts, (std::set<int64_t>{0, 1})) << "rank " << rank.rank;
  }
}

TEST(LiveMovesTest, AForcedSplitThatDoesNotFitThePlanExits64NamingTheFlag) {
  TempDir dir;
  std::string layout = dir.WriteFile(
      "layout.json",
      R"({"num_layers": 6, "stages": [{"first_layer": 0, "layers": 6, "ranks": [0]}]})");
  ProcessOptions options = Options(dir);
  (*options.env)["HETRUN_PLAN"] = layout;
  std::vector<std::string> argv = {HETRUN_TRAINER, "--force-split", "1:2,4"};
  argv.insert(argv.end(), kModel.begin(), kModel.end());
  ProcessResult r = RunProcess(argv, options);
  EXPECT_EQ(r.exit_code, 64) << r.out << r.err;
  EXPECT_NE(r.err.find("--force-split 1:2,4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 stages of 6 layers"), std::string::npos) << r.err;
  for (const char* bad : {"1", "x:1", "1:0,6", "1:"}) {
    ProcessResult p = RunProcess({HETRUN_TRAINER, "--force-split", bad}, options);
    EXPECT_EQ(p.exit_code, 64) << bad << ": " << p.err;
    EXPECT_NE(p.err.find("'--force-split'"), std::string::npos) << p.err;
  }
  ProcessResult t =
      RunProcess({HETRUN_TRAINER, "--rebalance-threshold", "0", "--layers", "4"}, options);
  EXPECT_EQ(t.exit_code, 64) << t.err;
  EXPECT_NE(t.err.find("--rebalance-threshold"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace hetrun

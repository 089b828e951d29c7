// `hetrun run --layout-state FILE` (docs/how-to/restarts.md): a job restarted whole
// (a new `hetrun run`, a new run folder) starts from the split in the layout state when it is a
// layout of the same job at a higher revision; anything else is ignored with a warning that says
// why, and the job starts from its plan. Across nodes node 0's state travels in its rendezvous
// record, so every node resumes alike. Workers here are shells that print what they were given.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "free_port.h"
#include "hetrun/pipeline/job_layout.h"
#include "run_harness.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::FreePort;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

// Ranks 0,1 hold layers 0-1, rank 2 layers 2-3 (4 named layers).
constexpr const char* kPlan = R"({
  "layers": 4, "micro_batches": 2, "layer_names": ["embedding", "block.0", "block.1", "head"],
  "stages": [{"stage": 0, "first_layer": 0, "layers": 2, "replicas": 2},
             {"stage": 1, "first_layer": 2, "layers": 2}]})";

// The layout state a moved run of kPlan leaves: split 3,1 at revision `revision`.
std::string MovedState(int revision, const std::string& names = R"("embedding", "block.0",
    "block.1", "head")",
                       const std::string& last_replicas = R"("ranks": [2], "families": [""],
    "shares": [1])") {
  return R"({"version": 1, "num_layers": 4, "micro_batches": 2, "min_share": 1,
    "schedule": "1f1b", "revision": )" +
         std::to_string(revision) + R"(, "layer_names": [)" + names + R"(],
    "stages": [{"first_layer": 0, "layers": 3, "ranks": [0, 1], "families": ["", ""],
                "shares": [1, 1]},
               {"first_layer": 3, "layers": 1, )" +
         last_replicas + "}]}";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Started {
  int code = -1;
  std::string out, err;
};

// One-machine `hetrun run --plan kPlan --layout-state STATE` of 3 shell workers that print
// their stage entry and the state path they were given.
Started RunWithState(const TempDir& dir, const std::string& state) {
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["TMPDIR"] = dir.path();  // run folders of this run only (not shared with other tests)
  HetrunProcess run(
      {"run", "--nproc-per-node", "3", "--prefix-ranks", "--plan", plan, "--layout-state", state,
       "--", "/bin/sh", "-c", "echo layers=$HETRUN_STAGE_LAYERS state=$HETRUN_LAYOUT_STATE"},
      env, dir.path());
  Started started;
  started.code = run.Wait(120s);
  started.out = run.out();
  started.err = run.err();
  return started;
}

TEST(RunLayoutStateTest, AStateOfTheSameJobAtAHigherRevisionGivesTheWorkersItsSplit) {
  TempDir dir;
  const std::string state = dir.WriteFile("state.json", MovedState(2));
  Started run = RunWithState(dir, state);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(Contains(run.err, "resuming from the layout state " + state +
                                    ", revision 2, split 3,1 (the plan's was 2,2)"))
      << run.err;
  for (const std::string line :
       {"[rank 0] layers=0:3", "[rank 1] layers=0:3", "[rank 2] layers=3:1"}) {
    EXPECT_TRUE(Contains(run.out, line + " state=" + state)) << line << "\n" << run.out;
  }
}

TEST(RunLayoutStateTest, NoStateYetStartsFromThePlanAndGivesTheWorkersThePath) {
  TempDir dir;
  const std::string state = dir.path() + "/state.json";
  Started run = RunWithState(dir, state);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(Contains(run.err, "no layout state at " + state + " yet")) << run.err;
  EXPECT_TRUE(Contains(run.out, "[rank 2] layers=2:2 state=" + state)) << run.out;
}

// Each state is ignored with a warning naming why; the workers get the plan's split.
TEST(RunLayoutStateTest, AStateOfAnotherModelWorldSizeOrACorruptOneIsIgnoredWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {MovedState(2, R"("embedding", "block.0", "block.9", "head")"),
       "its layer 2 is 'block.9', the plan's 'block.1' (another model?)"},
      {MovedState(2, R"("embedding", "block.0", "block.1", "head")",
                  R"("ranks": [2, 3], "families": ["", ""], "shares": [1, 1])"),
       "its stage 1 has ranks 2,3, the plan's 2 (another world size or other replicas)"},
      {MovedState(0), "its revision 0 is not above the plan's 0"},
      {"{\"version\": 1, \"num_layers\": 4, \"stag", "malformed"},
      {"", "the file is empty"}};
  for (const auto& [text, why] : cases) {
    TempDir dir;
    const std::string state = dir.WriteFile("state.json", text);
    Started run = RunWithState(dir, state);
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_TRUE(Contains(run.err, "ignoring the layout state " + state)) << run.err;
    EXPECT_TRUE(Contains(run.err, why)) << why << "\n" << run.err;
    EXPECT_TRUE(Contains(run.out, "[rank 0] layers=0:2")) << run.out;
    EXPECT_TRUE(Contains(run.out, "[rank 2] layers=2:2")) << run.out;
  }
}

TEST(RunLayoutStateTest, AStateFileInAFolderThatDoesNotExistExits64NamingTheFlag) {
  TempDir dir;
  Started run = RunWithState(dir, dir.path() + "/missing/state.json");
  EXPECT_EQ(run.code, 64) << run.err;
  EXPECT_TRUE(Contains(run.err, "--layout-state")) << run.err;
  EXPECT_FALSE(Contains(run.out, "layers=")) << "no worker started\n" << run.out;
}

bool HaveRendezvousLibrary() {
  return std::filesystem::exists(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so");
}

// Two pods (stage 0: ranks 0,1; stage 1: ranks 2,3) of 4 layers. Node 0 has the state; node 1
// is given a path with no file: it still resumes, from the text node 0 sent.
TEST(RunLayoutStateTest, AcrossTwoNodesBothResumeNodeZerosSplit) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  const std::string state = dir.WriteFile(
      "state.json", R"({"version": 1, "num_layers": 4, "micro_batches": 2, "revision": 3,
        "stages": [{"first_layer": 0, "layers": 1, "ranks": [0, 1], "families": ["ampere",
                    "ampere"], "shares": [1, 1]},
                   {"first_layer": 1, "layers": 3, "ranks": [2, 3], "families": ["hopper",
                    "hopper"], "shares": [1, 1]}]})");
  const std::string states[2] = {state, dir.path() + "/elsewhere.json"};
  const std::string gpus[2] = {"A100-SXM4-80GB:8.0:81049,A100-SXM4-80GB:8.0:81049",
                               "H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090"};
  const std::string layers[2] = {"0:2", "2:2"};
  const int port = FreePort();
  ProcessResult results[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      ProcessOptions options;
      options.timeout = 120s;
      options.env = std::map<std::string, std::string>{
          {"PATH", std::getenv("PATH")},       {"TMPDIR", dir.path()},
          {"HETRUN_FAKE_GPUS", gpus[i]},       {"HETRUN_TERMINATION_LOG", "/dev/null"},
          {"HETRUN_STAGE", std::to_string(i)}, {"HETRUN_STAGE_LAYERS", layers[i]},
          {"HETRUN_LAYOUT_STATE", states[i]}};
      results[i] = RunProcess({HETRUN_BINARY, "run", "--nnodes", "2", "--node-rank",
                               std::to_string(i), "--nproc-per-node", "2", "--master-addr",
                               "127.0.0.1", "--master-port", std::to_string(port), "--", "sh", "-c",
                               "echo rank=$RANK layers=$HETRUN_STAGE_LAYERS; cp \"$HETRUN_PLAN\" " +
                                   dir.path() + "/layout.$RANK.json"},
                              options);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(results[i].exit_code, 0) << "node " << i << ": " << results[i].err;
    EXPECT_TRUE(Contains(results[i].err, "resuming from the layout state " + state +
                                             ", revision 3, split 1,3 (the plan's was 2,2)"))
        << "node " << i << ": " << results[i].err;
  }
  EXPECT_TRUE(Contains(results[0].out, "rank=0 layers=0:1")) << results[0].out;
  EXPECT_TRUE(Contains(results[0].out, "rank=1 layers=0:1")) << results[0].out;
  EXPECT_TRUE(Contains(results[1].out, "rank=2 layers=1:3")) << results[1].out;
  EXPECT_TRUE(Contains(results[1].out, "rank=3 layers=1:3")) << results[1].out;
  for (int rank = 0; rank < 4; ++rank) {
    Result<pipeline::JobLayout> layout =
        pipeline::LoadJobLayout(dir.path() + "/layout." + std::to_string(rank) + ".json");
    ASSERT_TRUE(layout.ok()) << layout.status().ToString();
    EXPECT_EQ(layout->revision, 3) << "rank " << rank;
    EXPECT_EQ(layout->stages[1].first_layer, 1) << "rank " << rank;
  }
}

}  // namespace
}  // namespace hetrun

// Re-plans by restart for engines that take their split as arguments, and across nodes
// (docs/how-to/replan-restart.md): every attempt's workers get HETRUN_MEGATRON_ARGS and
// HETRUN_TORCHTITAN_ARGS rendered from the layout the attempt runs, so a restart after a
// re-plan starts the engine on the recorded split; across nodes the attempt barrier checks that
// every node restarts on node 0's layout (else every node exits 78), and a node whose workers
// are still saving when another node's re-plan restart is announced lets them finish. Workers
// here are shells that record a move the way hetrun.pipeline.record_move does (local rank 0
// replaces the layout file atomically) and print what they were given.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <thread>

#include "free_port.h"
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

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// 8 named layers, 6 on rank 0 and 2 on rank 1 (the seed's kind of bad hand split).
constexpr const char* kPlan = R"({
  "layers": 8, "micro_batches": 2,
  "layer_names": ["embedding", "block.0", "block.1", "block.2", "block.3", "block.4", "block.5",
                  "head"],
  "stages": [{"stage": 0, "family": "ampere", "first_layer": 0, "layers": 6},
             {"stage": 1, "family": "hopper", "first_layer": 6, "layers": 2}]})";

// The layout file after a re-plan to `first`, 8 - `first` (revision 1); `names` or none.
std::string MovedLayout(int first, bool names = true) {
  return std::string(R"({"version": 1, "num_layers": 8, "micro_batches": 2, "revision": 1,)") +
         (names ? R"( "layer_names": ["embedding", "block.0", "block.1", "block.2", "block.3",
                  "block.4", "block.5", "head"],)"
                : "") +
         R"( "stages": [{"first_layer": 0, "layers": )" + std::to_string(first) +
         R"(, "ranks": [0], "families": ["ampere"], "shares": [1]},
         {"first_layer": )" +
         std::to_string(first) + R"(, "layers": )" + std::to_string(8 - first) +
         R"(, "ranks": [1], "families": ["hopper"], "shares": [1]}]})";
}

// Attempt 0: local rank 0 replaces the layout file with MOVED, rank 0 completes a checkpoint
// (step-1/.metadata) and publishes it (hetrun-latest, renamed into place) and the others wait
// for that (as hetrun.pipelining's save returns on every rank once rank 0 published it), every
// worker exits 82. Every attempt prints its arguments on one line.
std::string Worker(const std::string& ckpt) {
  return "a=$TORCHELASTIC_RESTART_COUNT; "
         "echo \"attempt=$a rank=$RANK megatron: $(printf '%s' \"$HETRUN_MEGATRON_ARGS\" | tr "
         "'\\n' "
         "' ')\"; "
         "echo \"attempt=$a rank=$RANK torchtitan: $(printf '%s' \"$HETRUN_TORCHTITAN_ARGS\" | tr "
         "'\\n' ' ')\"; "
         "if [ \"$a\" = 0 ]; then "
         "  if [ \"$LOCAL_RANK\" = 0 ]; then cp \"$MOVED\" \"$HETRUN_PLAN.new\" && "
         "    mv \"$HETRUN_PLAN.new\" \"$HETRUN_PLAN\"; fi; "
         "  if [ \"$RANK\" = 0 ]; then mkdir -p " +
         ckpt + "/step-1 && : > " + ckpt + "/step-1/.metadata && echo step-1 > " + ckpt +
         "/.tmp && mv " + ckpt + "/.tmp " + ckpt + "/hetrun-latest; else until [ -e " + ckpt +
         "/hetrun-latest ]; do sleep 0.05; done; fi; exit 82; fi";
}

TEST(RunReplanEnginesTest, EachAttemptGetsTheEnginesArgumentsForTheLayoutItRuns) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["MOVED"] = dir.WriteFile("moved.json", MovedLayout(4));
  HetrunProcess run({"run", "--nproc-per-node", "2", "--plan", plan, "--replan-restart",
                     "--checkpoint-dir", ckpt, "--", "/bin/sh", "-c", Worker(ckpt)},
                    env, dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  const std::string out = run.out();
  for (const char* rank : {"0", "1"}) {
    const std::string a0 = std::string("attempt=0 rank=") + rank;
    const std::string a1 = std::string("attempt=1 rank=") + rank;
    EXPECT_TRUE(Contains(out, a0 + " megatron: --pipeline-model-parallel-size 2 --num-layers 6 "
                                   "--pipeline-model-parallel-layout Et*5|tL \n"))
        << out;
    EXPECT_TRUE(Contains(out, a1 + " megatron: --pipeline-model-parallel-size 2 --num-layers 6 "
                                   "--pipeline-model-parallel-layout Et*3|t*3L \n"))
        << out;
    EXPECT_TRUE(Contains(out, a1 + " torchtitan: --parallelism.pipeline_parallel_degree 2 "
                                   "--parallelism.pipeline_parallel_schedule 1F1B "
                                   "--parallelism.module_fqns_per_model_part "
                                   "tok_embeddings,layers.0,layers.1,layers.2 "
                                   "layers.3,layers.4,layers.5,norm,lm_head \n"))
        << out;
  }
}

TEST(RunReplanEnginesTest, TorchtitanNamesComeFromTheFlag) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", kPlan);
  HetrunProcess run({"run", "--nproc-per-node", "2", "--plan", plan, "--torchtitan-names",
                     "embed:blocks.{}:final_norm,output", "--", "/bin/sh", "-c",
                     "printf '%s' \"$HETRUN_TORCHTITAN_ARGS\" | tail -n 2 | tr '\\n' ' '"},
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(Contains(run.out(),
                       "embed,blocks.0,blocks.1,blocks.2,blocks.3,blocks.4 "
                       "blocks.5,final_norm,output"))
      << run.out();
}

TEST(RunReplanEnginesTest, BadTorchtitanNamesAreAUsageErrorNamingTheFlag) {
  TempDir dir;
  HetrunProcess run({"run", "--torchtitan-names", "embed:blocks:head", "--", "true"},
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 64) << run.err();
  EXPECT_TRUE(Contains(run.err(), "--torchtitan-names 'embed:blocks:head'")) << run.err();
}

TEST(RunReplanEnginesTest, ALayoutWithUnequalReplicasLeavesTheEngineVariablesOutSayingWhy) {
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", R"({
    "layers": 3, "micro_batches": 2,
    "stages": [{"stage": 0, "first_layer": 0, "layers": 2, "replicas": 2},
               {"stage": 1, "first_layer": 2, "layers": 1}]})");
  HetrunProcess run({"run", "--nproc-per-node", "3", "--plan", plan, "--", "/bin/sh", "-c",
                     "echo megatron=${HETRUN_MEGATRON_ARGS:-unset}"},
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(Contains(run.out(), "megatron=unset")) << run.out();
  EXPECT_TRUE(Contains(run.err(),
                       "HETRUN_MEGATRON_ARGS is not set for the workers: Megatron-LM "
                       "needs the same data-parallel size on every pipeline stage"))
      << run.err();
}

bool HaveRendezvousLibrary() {
  return std::filesystem::exists(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so");
}

// Two nodes of one worker each on 127.0.0.1 (stage 0, layers 0-5, on node 0; stage 1, layers
// 6-7, on node 1: the layout from each pod's HETRUN_STAGE entry), each `hetrun run` with `flags`
// and node i's worker running `workers[i]` (/bin/sh -c) with MOVED=`moved[i]`.
std::array<ProcessResult, 2> TwoNodes(TempDir& dir, const std::vector<std::string>& flags,
                                      const std::array<std::string, 2>& workers,
                                      const std::array<std::string, 2>& moved = {}) {
  const std::string layers[2] = {"0:6", "6:2"};
  const int port = FreePort();
  std::array<ProcessResult, 2> results;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      ProcessOptions options;
      options.timeout = 120s;
      options.env = std::map<std::string, std::string>{
          {"PATH", std::getenv("PATH")},           {"TMPDIR", dir.path()},
          {"HETRUN_TERMINATION_LOG", "/dev/null"}, {"HETRUN_STAGE", std::to_string(i)},
          {"HETRUN_STAGE_LAYERS", layers[i]},      {"MOVED", moved[i]}};
      std::vector<std::string> args = {HETRUN_BINARY,      "run",
                                       "--nnodes",         "2",
                                       "--node-rank",      std::to_string(i),
                                       "--nproc-per-node", "1",
                                       "--master-addr",    "127.0.0.1",
                                       "--master-port",    std::to_string(port),
                                       "--rdzv-timeout",   "60s"};
      args.insert(args.end(), flags.begin(), flags.end());
      args.insert(args.end(), {"--", "/bin/sh", "-c", workers[i]});
      results[i] = RunProcess(args, options);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// Both nodes re-plan by restart: node i's worker records moved[i] layers on stage 0 and waits
// delay_ms[i] before its 82.
std::array<ProcessResult, 2> TwoNodeReplan(TempDir& dir, const std::array<int, 2>& moved,
                                           const std::array<int, 2>& delay_ms) {
  const std::string ckpt = dir.path() + "/ckpt";
  ::mkdir(ckpt.c_str(), 0700);
  std::array<std::string, 2> workers, files;
  for (size_t i = 0; i < 2; ++i) {
    files[i] = dir.WriteFile("moved" + std::to_string(i) + ".json", MovedLayout(moved[i], false));
    workers[i] = "[ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && sleep " +
                 std::to_string(delay_ms[i] / 1000.0) + "; " + Worker(ckpt);
  }
  return TwoNodes(dir,
                  {"--layout-state", dir.path() + "/state.json", "--replan-restart",
                   "--checkpoint-dir", ckpt, "--grace-period", "30s"},
                  workers, files);
}

TEST(RunReplanEnginesTest, AcrossNodesEveryNodeRestartsOnTheRecordedSplit) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  // Node 1's worker exits 82 six seconds after node 0's (heartbeats are 1 s apart): node 0's
  // re-plan restart is announced while node 1's worker still "saves", and node 1 waits for it
  // instead of stopping it.
  std::array<ProcessResult, 2> results = TwoNodeReplan(dir, {4, 4}, {0, 6000});
  for (int i = 0; i < 2; ++i) {
    const ProcessResult& node = results[static_cast<size_t>(i)];
    ASSERT_EQ(node.exit_code, 0) << "node " << i << ": " << node.err;
    EXPECT_TRUE(Contains(node.out, "attempt=1 rank=" + std::to_string(i) +
                                       " megatron: --pipeline-model-parallel-size 2 --num-layers "
                                       "8 --pipeline-model-parallel-layout Et*4|t*4L \n"))
        << "node " << i << ": " << node.out;
    EXPECT_TRUE(Contains(node.err, "after 1 re-plan(s)")) << "node " << i << ": " << node.err;
  }
  EXPECT_TRUE(Contains(results[1].err,
                       "requested a re-plan: exit 82): waiting up to 30s for "
                       "every local worker to exit 82"))
      << results[1].err;
}

TEST(RunReplanEnginesTest, AcrossNodesADifferentRecordedSplitStopsEveryNodeWith78) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  std::array<ProcessResult, 2> results = TwoNodeReplan(dir, {4, 5}, {0, 0});
  for (int i = 0; i < 2; ++i) {
    const ProcessResult& node = results[static_cast<size_t>(i)];
    EXPECT_EQ(node.exit_code, 78) << "node " << i << ": " << node.err;
    EXPECT_TRUE(Contains(node.err,
                         "the nodes would restart on different layouts: node 0 has "
                         "layout revision 1, split 4,4"))
        << "node " << i << ": " << node.err;
    EXPECT_TRUE(Contains(node.err, "node 1 has layout revision 1, split 5,3"))
        << "node " << i << ": " << node.err;
    EXPECT_FALSE(Contains(node.out, "attempt=1")) << "node " << i << ": " << node.out;
  }
}

TEST(RunReplanEnginesTest, AcrossNodesALayoutOfAnotherLayerCountStopsEveryNodeWith78) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  std::array<ProcessResult, 2> results =
      TwoNodes(dir, {"--model-layers", "10"}, {"echo started", "echo started"});
  for (int i = 0; i < 2; ++i) {
    const ProcessResult& node = results[static_cast<size_t>(i)];
    EXPECT_EQ(node.exit_code, 78) << "node " << i << ": " << node.err;
    EXPECT_TRUE(Contains(node.err,
                         "the pipeline layout has 8 layers (split 6,2, revision 0), the "
                         "model 10"))
        << "node " << i << ": " << node.err;
    EXPECT_FALSE(Contains(node.out, "started")) << "node " << i << ": " << node.out;
  }
}

}  // namespace
}  // namespace hetrun

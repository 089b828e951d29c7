// A pipeline across nodes (docs/how-to/pipelines.md): real hetrun launchers on 127.0.0.1
// exchange their pods' stage entries at the rendezvous; every node writes the same layout file
// for its workers (HETRUN_PLAN), or every node exits 78 naming both nodes of the conflict.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "free_port.h"
#include "hetrun/pipeline/job_layout.h"
#include "run_process.h"

namespace hetrun {
namespace {

using testing::FreePort;

using namespace std::chrono_literals;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

constexpr const char* kA100 = "A100-SXM4-80GB:8.0:81049";
constexpr const char* kH100 = "H100-SXM5-80GB:9.0:81090";

struct Pod {
  std::string gpus;                // two GPUs: two workers
  std::string stage;               // HETRUN_STAGE
  std::string layers;              // HETRUN_STAGE_LAYERS
  std::string micro_batches = "";  // HETRUN_MICRO_BATCHES ("": unset)
};

// Every pod's `hetrun run` at once; each worker copies its HETRUN_PLAN to DIR/layout.RANK.json.
std::vector<ProcessResult> RunPods(const std::vector<Pod>& pods, const std::string& dir) {
  const int port = FreePort();
  std::vector<ProcessResult> results(pods.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < pods.size(); ++i) {
    threads.emplace_back([&, i] {
      std::vector<std::string> argv = {
          HETRUN_BINARY,
          "run",
          "--nnodes",
          std::to_string(pods.size()),
          "--node-rank",
          std::to_string(i),
          "--nproc-per-node",
          "2",
          "--master-addr",
          "127.0.0.1",
          "--master-port",
          std::to_string(port),
          "--",
          "sh",
          "-c",
          "echo stage=$HETRUN_STAGE; cp \"$HETRUN_PLAN\" " + dir + "/layout.$RANK.json"};
      ProcessOptions options;
      options.timeout = 90s;
      options.env = std::map<std::string, std::string>{{"PATH", std::getenv("PATH")},
                                                       {"HETRUN_FAKE_GPUS", pods[i].gpus},
                                                       {"HETRUN_TERMINATION_LOG", "/dev/null"},
                                                       {"HETRUN_STAGE", pods[i].stage},
                                                       {"HETRUN_STAGE_LAYERS", pods[i].layers}};
      if (!pods[i].micro_batches.empty()) {
        (*options.env)["HETRUN_MICRO_BATCHES"] = pods[i].micro_batches;
      }
      results[i] = RunProcess(argv, options);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool HaveRendezvousLibrary() {
  return std::filesystem::exists(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so");
}

TEST(PipelineRendezvousTest, EveryNodeAssemblesTheSameLayoutFromThePodsStageEntries) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  const std::string a100s = std::string(kA100) + "," + kA100;
  const std::string h100s = std::string(kH100) + "," + kH100;
  // A task's list narrowed by VC_TASK_INDEX is covered by stage_env; here each pod has its entry.
  std::vector<ProcessResult> results =
      RunPods({{a100s, "0", "0:2"}, {h100s, "1", "2:3"}, {a100s, "2", "5:1"}}, dir.path());
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_EQ(results[i].exit_code, 0) << "node " << i << ": " << results[i].err;
  }
  const std::string first = Read(dir.path() + "/layout.0.json");
  Result<pipeline::JobLayout> layout = pipeline::ParseJobLayout(first, "layout.0.json");
  ASSERT_TRUE(layout.ok()) << layout.status().ToString() << "\n" << first;
  ASSERT_EQ(layout->stages.size(), 3u);
  EXPECT_EQ(layout->num_layers, 6);
  EXPECT_EQ(layout->stages[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(layout->stages[1].families, (std::vector<std::string>{"hopper", "hopper"}));
  EXPECT_EQ(layout->micro_batches, 3) << "no pod sets HETRUN_MICRO_BATCHES: one per stage";
  for (int rank = 1; rank < 6; ++rank) {
    EXPECT_EQ(Read(dir.path() + "/layout." + std::to_string(rank) + ".json"), first)
        << "rank " << rank;
  }
}

TEST(PipelineRendezvousTest, OverlappingStagesMakeEveryNodeExit78NamingBothNodes) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  TempDir dir;
  const std::string a100s = std::string(kA100) + "," + kA100;
  std::vector<ProcessResult> results =
      RunPods({{a100s, "0", "0:2"}, {a100s, "1", "1:3"}}, dir.path());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].exit_code, 78) << "node " << i << ": " << results[i].err;
    EXPECT_NE(results[i].err.find("holds stage 1 from layer 1 but node 0"), std::string::npos)
        << "node " << i << ": " << results[i].err;
    EXPECT_NE(results[i].err.find("up to layer 2 (overlap)"), std::string::npos) << results[i].err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/layout.0.json")) << "no worker started";
}

// The plan's M travels in every pod's HETRUN_MICRO_BATCHES (hetrun plan --volcano writes it);
// pods that disagree are a half-updated deployment: every node exits 78 naming both.
TEST(PipelineRendezvousTest, ThePodsMicroBatchCountIsTheLayoutsAndMustAgree) {
  if (!HaveRendezvousLibrary()) GTEST_SKIP() << "multi-node rendezvous is not built";
  const std::string a100s = std::string(kA100) + "," + kA100;
  {
    TempDir dir;
    std::vector<ProcessResult> results =
        RunPods({{a100s, "0", "0:2", "8"}, {a100s, "1", "2:3", "8"}}, dir.path());
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_EQ(results[i].exit_code, 0) << "node " << i << ": " << results[i].err;
    }
    Result<pipeline::JobLayout> layout = pipeline::LoadJobLayout(dir.path() + "/layout.3.json");
    ASSERT_TRUE(layout.ok()) << layout.status().ToString();
    EXPECT_EQ(layout->micro_batches, 8);
  }
  TempDir dir;
  std::vector<ProcessResult> results =
      RunPods({{a100s, "0", "0:2", "8"}, {a100s, "1", "2:3", ""}}, dir.path());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].exit_code, 78) << "node " << i << ": " << results[i].err;
    EXPECT_NE(results[i].err.find("sets no HETRUN_MICRO_BATCHES but node 0"), std::string::npos)
        << "node " << i << ": " << results[i].err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/layout.0.json")) << "no worker started";
}

TEST(PipelineRendezvousTest, AMicroBatchCountThatIsNotAPositiveIntegerIsAConfigError) {
  ProcessOptions options;
  options.timeout = 60s;
  options.env = std::map<std::string, std::string>{
      {"PATH", std::getenv("PATH")},           {"HETRUN_FAKE_GPUS", kA100},
      {"HETRUN_TERMINATION_LOG", "/dev/null"}, {"HETRUN_STAGE", "0"},
      {"HETRUN_STAGE_LAYERS", "0:2"},          {"HETRUN_MICRO_BATCHES", "0"}};
  ProcessResult r = RunProcess(
      {HETRUN_BINARY, "run", "--nproc-per-node", "1", "--", "sh", "-c", "echo worker ran"},
      options);
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("HETRUN_MICRO_BATCHES=0: not a micro-batch count"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("worker ran"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hetrun

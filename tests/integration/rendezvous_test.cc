// Several real hetrun launchers on 127.0.0.1 meeting in node 0's TCPStore, each with its own
// fake GPU inventory: the job-wide ceiling every worker receives, and the 75/78/80/81 exits.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "free_port.h"
#include "run_process.h"

namespace hetrun {
namespace {

using testing::FreePort;

using namespace std::chrono_literals;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;

constexpr const char* kA100 = "A100-SXM4-80GB:8.0:81049";
constexpr const char* kH100 = "H100-SXM5-80GB:9.0:81090";
constexpr const char* kH200 = "H200:9.0:143360";
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kA100Ceiling = 81049 * kMiB - (uint64_t{2} << 30);

bool HaveRendezvousLibrary() {
  return std::filesystem::exists(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so");
}

#define REQUIRE_RENDEZVOUS()                                                          \
  if (!HaveRendezvousLibrary())                                                       \
  GTEST_SKIP() << "libhetrun_rendezvous.so not built (configured without libtorch): " \
                  "multi-node rendezvous is unavailable in this build"

struct Node {
  Node(int r, std::string g) : rank(r), gpus(std::move(g)) {}
  int rank = 0;
  std::string gpus;
  std::vector<std::string> extra_args;
  std::map<std::string, std::string> extra_env;
  std::string worker =
      "echo ceiling=$HETRUN_MEMORY_CEILING_BYTES rank=$RANK conf=$PYTORCH_ALLOC_CONF";
};

// Starts every node's `hetrun run` at once and waits for all.
std::vector<ProcessResult> RunJob(const std::vector<Node>& nodes, int nnodes,
                                  const std::vector<std::string>& common = {},
                                  std::chrono::milliseconds timeout = 60s) {
  int port = FreePort();
  std::vector<ProcessResult> results(nodes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < nodes.size(); ++i) {
    threads.emplace_back([&, i] {
      const Node& node = nodes[i];
      std::vector<std::string> argv = {HETRUN_BINARY,      "run",
                                       "--nnodes",         std::to_string(nnodes),
                                       "--node-rank",      std::to_string(node.rank),
                                       "--nproc-per-node", "2",
                                       "--master-addr",    "127.0.0.1",
                                       "--master-port",    std::to_string(port)};
      argv.insert(argv.end(), common.begin(), common.end());
      argv.insert(argv.end(), node.extra_args.begin(), node.extra_args.end());
      argv.insert(argv.end(), {"--", "sh", "-c", node.worker});
      ProcessOptions options;
      options.timeout = timeout;
      // Two workers a node, one GPU each (more workers than declared GPUs exits 64): a node
      // given one GPU declares it twice.
      const std::string gpus =
          node.gpus.find(',') == std::string::npos ? node.gpus + "," + node.gpus : node.gpus;
      std::map<std::string, std::string> env = {{"PATH", std::getenv("PATH")},
                                                {"HETRUN_FAKE_GPUS", gpus},
                                                {"HETRUN_TERMINATION_LOG", "/dev/null"}};
      for (const auto& [k, v] : node.extra_env) env[k] = v;
      options.env = env;
      results[i] = RunProcess(argv, options);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(RendezvousIntegrationTest, EveryWorkerOfAMixedJobGetsTheA100Ceiling) {
  REQUIRE_RENDEZVOUS();
  auto two = [](const char* gpu) { return std::string(gpu) + "," + gpu; };
  std::vector<Node> nodes = {
      {0, two(kH200)}, {1, two(kA100)}, {2, two(kH100)}, {3, two(kH200)}, {4, two(kH100)}};
  auto results = RunJob(nodes, 5);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_EQ(results[i].exit_code, 0) << "node " << i << ": " << results[i].err;
    int workers = 0;
    std::istringstream lines(results[i].out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("ceiling=", 0) != 0) continue;
      ++workers;
      EXPECT_NE(line.find("ceiling=" + std::to_string(kA100Ceiling) + " "), std::string::npos)
          << line;
      EXPECT_NE(line.find("per_process_memory_fraction:0."), std::string::npos) << line;
    }
    EXPECT_EQ(workers, 2) << results[i].out;
  }
}

TEST(RendezvousIntegrationTest, MissingNodeTimesOutWith75ListingJoinedAndMissing) {
  REQUIRE_RENDEZVOUS();
  auto results = RunJob({{0, kA100}, {2, kH100}}, 3, {"--rdzv-timeout", "2s"});
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 75) << r.err;
    EXPECT_NE(r.err.find("node ranks joined: 0, 2; missing: 1"), std::string::npos) << r.err;
  }
}

// Issue 28 item 7: transient (75, Volcano restarts the gang), no longer 78 (TerminateJob).
TEST(RendezvousIntegrationTest, DuplicateNodeRankIs75NamingBothNodes) {
  REQUIRE_RENDEZVOUS();
  auto results = RunJob({{0, kA100}, {1, kH100}, {1, kH200}}, 3, {"--rdzv-timeout", "20s"});
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 75) << r.err;
    EXPECT_NE(r.err.find("node rank 1 claimed twice"), std::string::npos) << r.err;
  }
}

// Issue 28 item 8: both nodes connected, each with its own secret. Before: both waited the whole
// --rdzv-timeout and exited 75 "1 of 2 nodes joined". Now 78 at the timeout (never earlier),
// naming where each node's secret came from and never the secret.
TEST(RendezvousIntegrationTest, DifferentJobSecretsAre78AtTheRdzvTimeoutNamingTheirSource) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  const std::string file = dir.path() + "/secret";
  std::ofstream(file) << "beta-secret\n";
  Node zero(0, kA100), one(1, kH100);
  zero.extra_env["HETRUN_JOB_SECRET"] = "alpha-secret";
  one.extra_env["HETRUN_JOB_SECRET_FILE"] = file;
  auto start = std::chrono::steady_clock::now();
  auto results = RunJob({zero, one}, 2, {"--rdzv-timeout", "3s"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("different secrets: both exited after %.2f s (--rdzv-timeout 3s)\n", seconds);
  EXPECT_GE(seconds, 3.0);
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 78) << r.err;
    EXPECT_NE(r.err.find("do not share the job secret"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("alpha-secret"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("beta-secret"), std::string::npos) << r.err;
    EXPECT_FALSE(std::regex_search(r.err, std::regex("hetrun/[0-9a-f]{16}/")))
        << "the key prefix is derived from the secret: " << r.err;
  }
  EXPECT_NE(results[0].err.find("secret comes from HETRUN_JOB_SECRET,"), std::string::npos)
      << results[0].err;
  EXPECT_NE(results[1].err.find("secret comes from HETRUN_JOB_SECRET_FILE=" + file),
            std::string::npos)
      << results[1].err;
}

// The incarnation (HETRUN_INCARNATION, from the pod's volcano.sh/job-version) is part of what
// the records are bound to: a launcher of another incarnation is never believed, and with the
// same secret it is a stale peer (a pod of the earlier incarnation still terminating, issue 39
// item 8): both wait for their own incarnation's peer and exit 75 (transient) at the rendezvous
// timeout, never 78 (TerminateJob for an overlap that a restart resolves).
TEST(RendezvousIntegrationTest, LaunchersOfDifferentIncarnationsDoNotMeet) {
  REQUIRE_RENDEZVOUS();
  Node zero(0, kA100), one(1, kH100);
  for (Node* node : {&zero, &one}) node->extra_env["HETRUN_JOB_SECRET"] = "the job's secret";
  zero.extra_env["HETRUN_INCARNATION"] = "4";
  one.extra_env["HETRUN_INCARNATION"] = "3";
  auto results = RunJob({zero, one}, 2, {"--rdzv-timeout", "2s"});
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 75) << r.err;
    EXPECT_NE(r.err.find("answered for another incarnation of this job"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("a stale peer"), std::string::npos) << r.err;
  }
}

TEST(RendezvousIntegrationTest, NcclVersionMismatchIs78NamingBothNodes) {
  REQUIRE_RENDEZVOUS();
  Node a{0, kA100}, b{1, kH100};
  a.extra_env["HETRUN_NCCL_VERSION"] = "2.28.9";
  b.extra_env["HETRUN_NCCL_VERSION"] = "2.27.3";
  auto results = RunJob({a, b}, 2, {"--rdzv-timeout", "20s"});
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 78) << r.err;
    EXPECT_NE(r.err.find("NCCL version"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("2.28.9"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("2.27.3"), std::string::npos) << r.err;
  }
}

TEST(RendezvousIntegrationTest, DisagreeingWorldSizeIs78) {
  REQUIRE_RENDEZVOUS();
  Node a{0, kA100}, b{1, kH100};
  b.extra_args = {"--nnodes", "3"};  // the later flag wins: node 1 believes in 3 nodes
  auto results = RunJob({a, b}, 2, {"--rdzv-timeout", "5s"});
  EXPECT_EQ(results[1].exit_code, 78) << results[1].err;
  EXPECT_NE(results[1].err.find("differs between nodes"), std::string::npos) << results[1].err;
}

TEST(RendezvousIntegrationTest, ArchMismatchOnOneNodeIs80WithTheSameTableEverywhere) {
  REQUIRE_RENDEZVOUS();
  // The image covers Hopper only; node 1's A100 makes every node fail.
  auto results = RunJob({{0, kH100}, {1, kA100}, {2, kH200}}, 3,
                        {"--arch-list", "9.0", "--rdzv-timeout", "20s"});
  std::string table;
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 80) << r.err;
    size_t at = r.err.find("NODE ");
    ASSERT_NE(at, std::string::npos) << r.err;
    std::string mine = r.err.substr(at, r.err.find("\n\n", at) - at);
    EXPECT_NE(mine.find("8.0"), std::string::npos);
    EXPECT_NE(mine.find("FAILS"), std::string::npos);
    if (table.empty()) table = mine;
    EXPECT_EQ(mine.substr(0, 400), table.substr(0, 400));
  }
}

TEST(RendezvousIntegrationTest, CeilingBelowMinMemoryIs81NamingNodeAndGpu) {
  REQUIRE_RENDEZVOUS();
  auto results = RunJob({{0, kH200}, {1, kA100}}, 2, {"--min-memory", "100GiB"});
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 81) << r.err;
    EXPECT_NE(r.err.find("node 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("A100-SXM4-80GB usable 81049 MiB"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("102400 MiB"), std::string::npos) << r.err;
  }
}

TEST(RendezvousIntegrationTest, VanishedNodeIsNoticedWellBeforeNcclsTenMinutes) {
  REQUIRE_RENDEZVOUS();
  Node a{0, kA100}, b{1, kH100};
  a.worker = "sleep 60";
  // Node 1's first worker SIGKILLs its launcher once the job runs: node 1 vanishes.
  b.worker = "if [ \"$LOCAL_RANK\" = 0 ]; then sleep 1; kill -9 $PPID; fi; sleep 3";
  auto start = std::chrono::steady_clock::now();
  auto results = RunJob({a, b}, 2, {"--peer-timeout", "3s"}, 45s);
  auto noticed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(results[0].exit_code, 75) << results[0].err;
  EXPECT_NE(results[0].err.find("node 1"), std::string::npos) << results[0].err;
  EXPECT_LT(noticed, 30s);
  std::printf("vanished node noticed after %lld ms (peer timeout 3s)\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(noticed).count()));
}

TEST(RendezvousIntegrationTest, LaunchersStartedByMpirunMeet) {
  REQUIRE_RENDEZVOUS();
  if (system("command -v mpirun > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun (OpenMPI) not installed";
  }
  int port = FreePort();
  ProcessOptions options;
  options.timeout = 60s;
  options.env =
      std::map<std::string, std::string>{{"PATH", std::getenv("PATH")},
                                         {"HETRUN_FAKE_GPUS", std::string(kH100) + "," + kA100},
                                         {"HETRUN_TERMINATION_LOG", "/dev/null"},
                                         {"HOME", "/tmp"}};
  ProcessResult r = RunProcess(
      {"mpirun",
       "--allow-run-as-root",
       "--oversubscribe",
       "-np",
       "3",
       "-x",
       "HETRUN_FAKE_GPUS",
       "-x",
       "HETRUN_TERMINATION_LOG",
       HETRUN_BINARY,
       "run",
       "--master-addr",
       "127.0.0.1",
       "--master-port",
       std::to_string(port),
       "--rdzv-timeout",
       "30s",
       "--",
       "sh",
       "-c",
       "echo rank=$RANK ceiling=$HETRUN_MEMORY_CEILING_BYTES store=$TORCHELASTIC_USE_AGENT_STORE"},
      options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(r.out.find("rank=" + std::to_string(rank) +
                         " ceiling=" + std::to_string(kA100Ceiling) + " store=True"),
              std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.err.find("3 nodes in"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrun

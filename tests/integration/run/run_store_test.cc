// Issue 28 items 2 and 3: on one node hetrun hosts the job's store as on several
// (docs/ARCHITECTURE.md §2.4). The port is bound before anything else, so a port another job
// holds is refused before any worker starts (exit 78 naming the port and its holder) and a
// worker never joins another job's store; --standalone's free port stays held while the workers
// import; real torch workers run under the hosted store; without a usable plugin rank 0 binds the
// port as before.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_harness.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::TempDir;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A socket listening on 127.0.0.1:port, as another job's store would (closed by the caller).
int ListenOn(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// A worker that says whether MASTER_PORT could be bound on 127.0.0.1 after `delay_s` (the
/// time its imports would take): "HELD" or "FREE", then the agent-store variable.
std::string PortProbe(double delay_s) {
  return "import os, socket, time\n"
         "time.sleep(" +
         std::to_string(delay_s) +
         ")\n"
         "s = socket.socket()\n"
         "try:\n"
         "    s.bind(('127.0.0.1', int(os.environ['MASTER_PORT'])))\n"
         "    print('FREE', flush=True)\n"
         "except OSError:\n"
         "    print('HELD', flush=True)\n"
         "print('AGENT_STORE=' + os.environ['TORCHELASTIC_USE_AGENT_STORE'], flush=True)\n";
}

bool HostsStore() {
  return testing::OneNodeAgentStore() == "True";
}

TEST(RunStoreTest, ATakenPortExits78BeforeAnyWorkerStartsNamingThePortAndItsHolder) {
  TempDir dir;
  const int port = testing::FreePort();
  const int other = ListenOn(port);
  ASSERT_GE(other, 0);
  HetrunProcess run({"run", "--nproc-per-node", "2", "--master-port", std::to_string(port), "--",
                     "sh", "-c", "touch " + dir.path() + "/started_$RANK"},
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(60s), 78) << run.err();
  ::close(other);
  EXPECT_TRUE(Contains(run.err(), "MASTER_PORT " + std::to_string(port) + " on 127.0.0.1"))
      << run.err();
  EXPECT_TRUE(Contains(run.err(), "pid " + std::to_string(::getpid()))) << run.err();
  EXPECT_TRUE(Contains(run.err(), "started no worker")) << run.err();
  EXPECT_TRUE(Contains(testing::ReadFile(dir.path() + "/termination-log"),
                       "MASTER_PORT " + std::to_string(port)));
  for (int rank : {0, 1}) {
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/started_" + std::to_string(rank)));
  }
}

TEST(RunStoreTest, TwoConcurrentOneNodeJobsOnOnePortNeverShareAStore) {
  if (!HostsStore()) GTEST_SKIP() << "no rendezvous plugin in this build: no store is hosted";
  TempDir dir;
  const std::string port = std::to_string(testing::FreePort());
  const std::string wait_for_go =
      "touch " + dir.path() + "/a_$RANK; while [ ! -e " + dir.path() + "/go ]; do sleep 0.05; done";
  HetrunProcess first(
      {"run", "--nproc-per-node", "2", "--master-port", port, "--", "sh", "-c", wait_for_go},
      HetrunEnv(dir.path()), dir.path(), "first");
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        return std::filesystem::exists(dir.path() + "/a_0") &&
               std::filesystem::exists(dir.path() + "/a_1");
      },
      120s))
      << first.err();
  HetrunProcess second({"run", "--nproc-per-node", "2", "--master-port", port, "--", "sh", "-c",
                        "touch " + dir.path() + "/b_$RANK"},
                       HetrunEnv(dir.path()), dir.path(), "second");
  EXPECT_EQ(second.Wait(60s), 78) << second.err();
  EXPECT_TRUE(Contains(second.err(), "pid " + std::to_string(first.pid()))) << second.err();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/b_0"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/b_1"));
  std::ofstream(dir.path() + "/go") << "go\n";
  EXPECT_EQ(first.Wait(120s), 0) << first.err();
}

TEST(RunStoreTest, ARealTorchWorkerPairRunsUnderTheStoreHetrunHosts) {
  const std::string python = HETRUN_TEST_PYTHON;
  if (!HostsStore()) GTEST_SKIP() << "no rendezvous plugin in this build: no store is hosted";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << "no test Python at " << python;
  TempDir dir;
  const std::string worker =
      dir.WriteFile("gloo_pair.py",
                    "import os, socket\n"
                    "s = socket.socket()\n"
                    "try:\n"
                    "    s.bind(('127.0.0.1', int(os.environ['MASTER_PORT'])))\n"
                    "    held = False\n"
                    "except OSError:\n"
                    "    held = True\n"
                    "s.close()\n"
                    "import torch, torch.distributed as dist\n"
                    "dist.init_process_group('gloo')\n"
                    "t = torch.tensor([float(dist.get_rank() + 1)])\n"
                    "dist.all_reduce(t)\n"
                    "print(f\"rank={dist.get_rank()} sum={t.item()} held={held} "
                    "agent={os.environ['TORCHELASTIC_USE_AGENT_STORE']}\", flush=True)\n"
                    "dist.destroy_process_group()\n");
  HetrunProcess run({"run", "--nproc-per-node", "2", "--master-port",
                     std::to_string(testing::FreePort()), "--", python, worker},
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(600s), 0) << run.err() << run.out();
  for (const char* rank : {"0", "1"}) {
    EXPECT_TRUE(Contains(run.out(), std::string("rank=") + rank + " sum=3.0 held=True agent=True"))
        << run.out();
  }
}

TEST(RunStoreTest, StandaloneHoldsItsPortWhileTheWorkersImport) {
  if (!HostsStore()) GTEST_SKIP() << "no rendezvous plugin in this build: no store is hosted";
  TempDir dir;
  const std::string probe = dir.WriteFile("probe.py", PortProbe(1.0));
  HetrunProcess run({"--standalone", "--nproc-per-node", "2", "--no-python", "python3", probe},
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(120s), 0) << run.err();
  EXPECT_FALSE(Contains(run.out(), "FREE")) << run.out();
  EXPECT_TRUE(Contains(run.out(), "HELD")) << run.out();
  EXPECT_TRUE(Contains(run.out(), "AGENT_STORE=True")) << run.out();
}

// A launcher whose plugin cannot be used (its record names a torch release that is not
// installed): no store is hosted, the port was checked and is released for rank 0.
TEST(RunStoreTest, WithoutAUsablePluginRankZeroBindsTheCheckedPortAsBefore) {
  namespace fs = std::filesystem;
  TempDir dir;
  fs::create_directories(dir.path() + "/launcher/bin");
  fs::create_directories(dir.path() + "/launcher/lib");
  fs::copy_file(HETRUN_BINARY, dir.path() + "/launcher/bin/hetrun");
  dir.WriteFile("launcher/lib/libhetrun_rendezvous.so", "not loaded\n");
  dir.WriteFile("launcher/lib/libhetrun_rendezvous.torch",
                "torch_version=0.0.1\ntorch_dir=" + dir.path() + "/no-torch\n");
  const std::string hetrun = dir.path() + "/launcher/bin/hetrun";
  const std::string probe = dir.WriteFile("probe.py", PortProbe(0.2));
  const int port = testing::FreePort();
  testing::ProcessOptions options;
  options.env = HetrunEnv(dir.path());
  testing::ProcessResult free_run =
      testing::RunProcess({hetrun, "run", "--nproc-per-node", "1", "--master-port",
                           std::to_string(port), "--", "python3", probe},
                          options);
  ASSERT_EQ(free_run.exit_code, 0) << free_run.err;
  EXPECT_TRUE(Contains(free_run.out, "FREE")) << free_run.out;
  EXPECT_TRUE(Contains(free_run.out, "AGENT_STORE=False")) << free_run.out;
  EXPECT_TRUE(Contains(free_run.err, "no store hosted")) << free_run.err;
  const int other = ListenOn(port);
  ASSERT_GE(other, 0);
  testing::ProcessResult taken =
      testing::RunProcess({hetrun, "run", "--nproc-per-node", "1", "--master-port",
                           std::to_string(port), "--", "python3", probe},
                          options);
  ::close(other);
  EXPECT_EQ(taken.exit_code, 78) << taken.err;
  EXPECT_TRUE(Contains(taken.err, "MASTER_PORT " + std::to_string(port))) << taken.err;
  EXPECT_FALSE(Contains(taken.out, "AGENT_STORE")) << "no worker started: " << taken.out;
}

// The plugin is found and its torch checked, but the server does not come up (here: the plugin
// file does not load): the workers, which wait for it, are stopped and the run exits 78 with the
// reason, never waiting for their store timeouts.
TEST(RunStoreTest, AStoreThatFailsToComeUpStopsTheWorkersWithExit78) {
  namespace fs = std::filesystem;
  if (!HostsStore()) GTEST_SKIP() << "no rendezvous plugin in this build: no store is hosted";
  TempDir dir;
  fs::create_directories(dir.path() + "/launcher/bin");
  fs::create_directories(dir.path() + "/launcher/lib");
  fs::copy_file(HETRUN_BINARY, dir.path() + "/launcher/bin/hetrun");
  dir.WriteFile("launcher/lib/libhetrun_rendezvous.so", "not an ELF file\n");
  fs::copy_file(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.torch",
                dir.path() + "/launcher/lib/libhetrun_rendezvous.torch");
  testing::ProcessOptions options;
  options.env = HetrunEnv(dir.path());
  options.timeout = 120s;
  testing::ProcessResult run = testing::RunProcess(
      {dir.path() + "/launcher/bin/hetrun", "run", "--nproc-per-node", "2", "--master-port",
       std::to_string(testing::FreePort()), "--grace-period", "5s", "--", "sleep", "600"},
      options);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, 78) << run.err;
  EXPECT_TRUE(Contains(run.err, "did not come up")) << run.err;
  EXPECT_TRUE(Contains(testing::ReadFile(dir.path() + "/termination-log"), "did not come up"));
}

}  // namespace
}  // namespace hetrun

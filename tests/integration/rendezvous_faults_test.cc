// Faults around the multi-node store, with real launchers on 127.0.0.1: a frozen node 0, shutdown
// signals while waiting at the rendezvous and in node 0's final wait (also as PID 1 of a PID
// namespace), a lost node not waited for twice, and a stranger without the job secret.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "free_port.h"
#include "run_process.h"

namespace hetrun {
namespace {

using testing::FreePort;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kGpu = "A100-SXM4-80GB:8.0:81049";

bool HaveRendezvousLibrary() {
  return std::filesystem::exists(std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so");
}

#define REQUIRE_RENDEZVOUS()                                                          \
  if (!HaveRendezvousLibrary())                                                       \
  GTEST_SKIP() << "libhetrun_rendezvous.so not built (configured without libtorch): " \
                  "multi-node rendezvous is unavailable in this build"

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One background process (its own process group) with stdout+stderr in a file and its own
// termination log; Wait() reports 128+N for a signal, -1 past the limit (then SIGKILLed).
class Launcher {
 public:
  Launcher(const std::string& dir, const std::string& tag, std::vector<std::string> argv,
           std::map<std::string, std::string> env)
      : log_(dir + "/" + tag + ".log"), termination_log_(dir + "/" + tag + ".termination") {
    env["PATH"] = getenv("PATH");  // NOLINT: test harness
    env["HETRUN_TERMINATION_LOG"] = termination_log_;
    env["HETRUN_FAKE_GPUS"] = kGpu;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> c_argv, c_env;
    for (std::string& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    for (std::string& e : env_strings) c_env.push_back(e.data());
    c_env.push_back(nullptr);
    start_ = Clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      int out = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int null = open("/dev/null", O_RDONLY);
      if (out < 0 || null < 0) _exit(125);
      dup2(null, 0);
      dup2(out, 1);
      dup2(out, 2);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execvpe(c_argv[0], c_argv.data(), c_env.data());
      _exit(127);
    }
  }
  ~Launcher() {
    if (code_ == -2) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  pid_t pid() const { return pid_; }
  std::string log() const { return Slurp(log_); }
  std::string termination_log() const { return Slurp(termination_log_); }

  bool WaitForLog(const std::string& text, std::chrono::milliseconds limit = 60s) const {
    auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      if (log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  int Wait(std::chrono::milliseconds limit) {
    if (code_ != -2) return code_;
    auto end = Clock::now() + limit;
    while (true) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        ended_ = Clock::now();
        return code_;
      }
      if (Clock::now() >= end) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        code_ = -1;
        ended_ = Clock::now();
        return code_;
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  Clock::time_point ended() const { return ended_; }
  Clock::time_point started() const { return start_; }

 private:
  std::string log_;
  std::string termination_log_;
  pid_t pid_ = -1;
  int code_ = -2;
  Clock::time_point start_;
  Clock::time_point ended_;
};

std::vector<std::string> NodeArgs(int rank, int nnodes, int port,
                                  const std::vector<std::string>& extra,
                                  const std::string& worker) {
  std::vector<std::string> argv = {HETRUN_BINARY,      "run",
                                   "--nnodes",         std::to_string(nnodes),
                                   "--node-rank",      std::to_string(rank),
                                   "--nproc-per-node", "1",
                                   "--master-addr",    "127.0.0.1",
                                   "--master-port",    std::to_string(port)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--", "sh", "-c", worker});
  return argv;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

TEST(RendezvousFaultsTest, FrozenNode0MakesTheOtherNodeExit75WithinThePeerTimeout) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  std::vector<std::string> common = {"--peer-timeout", "3s", "--grace-period", "5s"};
  Launcher node0(dir.path(), "node0", NodeArgs(0, 2, port, common, "sleep 120"), {});
  Launcher node1(dir.path(), "node1", NodeArgs(1, 2, port, common, "sleep 120"), {});
  ASSERT_TRUE(node1.WaitForLog("2 nodes in")) << node1.log();
  std::this_thread::sleep_for(500ms);
  // Node 0's launcher stops answering but keeps its connections open (a frozen process).
  ASSERT_EQ(kill(node0.pid(), SIGSTOP), 0);
  auto frozen = Clock::now();
  int code = node1.Wait(60s);
  EXPECT_EQ(code, 75) << node1.log();
  EXPECT_NE(node1.log().find("node 0"), std::string::npos) << node1.log();
  std::printf("frozen node 0: node 1 exited %d after %.1f s (peer timeout 3 s)\n", code,
              Seconds(node1.ended() - frozen));
  kill(node0.pid(), SIGCONT);
}

TEST(RendezvousFaultsTest, SigtermWhileWaitingAtTheRendezvousExits143AndSaysWhere) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  Launcher node0(dir.path(), "node0",
                 NodeArgs(0, 2, port, {"--rdzv-timeout", "120s"}, "echo never"), {});
  ASSERT_TRUE(node0.WaitForLog("joined as node 0")) << node0.log();
  ASSERT_EQ(kill(node0.pid(), SIGTERM), 0);
  auto sent = Clock::now();
  EXPECT_EQ(node0.Wait(30s), 143) << node0.log();
  std::printf("SIGTERM at the rendezvous: exit after %.2f s\n", Seconds(node0.ended() - sent));
  std::string reason = node0.termination_log();
  EXPECT_NE(reason.find("SIGTERM"), std::string::npos) << reason;
  EXPECT_NE(reason.find("rendezvous"), std::string::npos) << reason;
  EXPECT_EQ(node0.log().find("never"), std::string::npos);
}

TEST(RendezvousFaultsTest, SigintWhileWaitingAtTheRendezvousAsPid1Exits130) {
  REQUIRE_RENDEZVOUS();
  if (system("unshare --pid --fork true > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "unshare --pid not permitted here";
  }
  testing::TempDir dir;
  int port = FreePort();
  std::vector<std::string> argv = {"unshare", "--pid", "--fork"};
  for (const std::string& a : NodeArgs(0, 2, port, {"--rdzv-timeout", "120s"}, "echo never")) {
    argv.push_back(a);
  }
  Launcher unshare(dir.path(), "pid1", argv, {});
  ASSERT_TRUE(unshare.WaitForLog("joined as node 0")) << unshare.log();
  // hetrun is the child of unshare: PID 1 of the new namespace, where a signal without a
  // handler is dropped.
  std::string children = Slurp("/proc/" + std::to_string(unshare.pid()) + "/task/" +
                               std::to_string(unshare.pid()) + "/children");
  pid_t hetrun = static_cast<pid_t>(std::atoi(children.c_str()));
  ASSERT_GT(hetrun, 0) << children;
  ASSERT_EQ(kill(hetrun, SIGINT), 0);
  // unshare --fork passes hetrun's exit status on: 130, not a crash at exit (139).
  EXPECT_EQ(unshare.Wait(30s), 130) << unshare.log();
  std::string reason = unshare.termination_log();
  EXPECT_NE(reason.find("hetrun exited with 130: received SIGINT"), std::string::npos)
      << reason << unshare.log();
}

TEST(RendezvousFaultsTest, SigtermDuringNode0sFinalWaitExits143AndSaysWhere) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  Launcher node0(dir.path(), "node0", NodeArgs(0, 2, port, {}, "true"), {});
  Launcher node1(dir.path(), "node1", NodeArgs(1, 2, port, {}, "sleep 120"), {});
  ASSERT_TRUE(node0.WaitForLog("waiting for node(s) 1")) << node0.log();
  ASSERT_EQ(kill(node0.pid(), SIGTERM), 0);
  auto sent = Clock::now();
  EXPECT_EQ(node0.Wait(30s), 143) << node0.log();
  std::printf("SIGTERM in node 0's final wait: exit after %.2f s\n", Seconds(node0.ended() - sent));
  std::string reason = node0.termination_log();
  EXPECT_NE(reason.find("received SIGTERM during node 0's final wait"), std::string::npos)
      << reason << node0.log();
  // Node 1 loses the store and stops as a transient failure.
  EXPECT_EQ(node1.Wait(60s), 75) << node1.log();
}

TEST(RendezvousFaultsTest, NodeDeclaredLostIsNotWaitedForAgainAtTheEnd) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  std::vector<std::string> common = {"--peer-timeout", "8s"};
  Launcher node0(dir.path(), "node0", NodeArgs(0, 2, port, common, "sleep 120"), {});
  Launcher node1(dir.path(), "node1", NodeArgs(1, 2, port, common, "sleep 1; kill -9 $PPID"), {});
  ASSERT_TRUE(node0.WaitForLog("node 1 lost", 60s)) << node0.log();
  auto lost = Clock::now();
  EXPECT_EQ(node0.Wait(60s), 75) << node0.log();
  double after = Seconds(node0.ended() - lost);
  std::printf("node 0 exited %.2f s after declaring node 1 lost (peer timeout 8 s)\n", after);
  // A second peer timeout (8 s) would follow the first if node 0 waited for node 1 again.
  EXPECT_LT(after, 7.0) << node0.log();
}

TEST(RendezvousFaultsTest, StrangerWithoutTheJobSecretCannotTakeANodeRank) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  std::vector<std::string> common = {"--rdzv-timeout", "8s"};
  std::map<std::string, std::string> job{{"HETRUN_JOB_SECRET", "the job's secret"}};
  std::map<std::string, std::string> wrong{{"HETRUN_JOB_SECRET", "a guess"}};
  Launcher node0(dir.path(), "node0", NodeArgs(0, 2, port, common, "echo worker0"), job);
  ASSERT_TRUE(node0.WaitForLog("joined as node 0")) << node0.log();
  Launcher stranger(dir.path(), "stranger", NodeArgs(1, 2, port, common, "echo stranger"), wrong);
  ASSERT_TRUE(stranger.WaitForLog("waiting for node 0 to open the rendezvous")) << stranger.log();
  Launcher node1(dir.path(), "node1", NodeArgs(1, 2, port, common, "echo worker1"), job);
  EXPECT_EQ(node1.Wait(60s), 0) << node1.log();
  EXPECT_EQ(node0.Wait(60s), 0) << node0.log();
  EXPECT_NE(node0.log().find("worker0"), std::string::npos);
  // The stranger never sees this rendezvous's nonce; when node 0 ends it is told that its secret
  // is not the job's (78), naming where it came from.
  EXPECT_EQ(stranger.Wait(60s), 78) << stranger.log();
  EXPECT_NE(stranger.log().find("secret comes from HETRUN_JOB_SECRET,"), std::string::npos)
      << stranger.log();
  EXPECT_EQ(stranger.log().find("stranger\n"), std::string::npos) << stranger.log();
  EXPECT_EQ(node0.log().find("unauthenticated"), std::string::npos) << node0.log();
}

TEST(RendezvousFaultsTest, WithoutASecretTheStoreIsSaidToBeUnauthenticated) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  Launcher node0(dir.path(), "node0", NodeArgs(0, 2, port, {}, "true"), {});
  Launcher node1(dir.path(), "node1", NodeArgs(1, 2, port, {}, "true"), {});
  EXPECT_EQ(node0.Wait(60s), 0) << node0.log();
  EXPECT_EQ(node1.Wait(60s), 0) << node1.log();
  EXPECT_NE(node0.log().find("is unauthenticated"), std::string::npos) << node0.log();
}

// Item 6: node 1's worker exits 75 in attempt 0; node 0's would sleep for two minutes. The whole
// job restarts: node 0 stops its worker, both agree on attempt 1 and start it together.
TEST(RendezvousFaultsTest, RestartIsJobWideAndEveryNodeStartsTheSameAttempt) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  std::vector<std::string> common = {"--max-restarts", "1", "--grace-period", "5s"};
  const std::string say = "echo attempt=$TORCHELASTIC_RESTART_COUNT rank=$RANK";
  Launcher node0(
      dir.path(), "node0",
      NodeArgs(0, 2, port, common,
               "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then exec sleep 120; fi; " + say),
      {});
  Launcher node1(
      dir.path(), "node1",
      NodeArgs(1, 2, port, common,
               "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then sleep 1; exit 75; fi; " + say),
      {});
  EXPECT_EQ(node1.Wait(60s), 0) << node1.log();
  EXPECT_EQ(node0.Wait(60s), 0) << node0.log();
  EXPECT_NE(node0.log().find("attempt=1 rank=0"), std::string::npos) << node0.log();
  EXPECT_NE(node1.log().find("attempt=1 rank=1"), std::string::npos) << node1.log();
  EXPECT_NE(node0.log().find("job-wide restart"), std::string::npos) << node0.log();
  std::printf("job-wide restart: both nodes done %.1f s after start\n",
              Seconds(node0.ended() - node0.started()));
}

// The same with node 0's worker failing: node 0's own request for attempt 1 moves it to that
// attempt at once, and node 1 still learns of it from node 0's heartbeat line (it used to look
// only one attempt beyond node 0's, so node 1's worker ran on and node 0 waited at the barrier).
TEST(RendezvousFaultsTest, ARestartAskedForByNodeZeroReachesTheOtherNodes) {
  REQUIRE_RENDEZVOUS();
  testing::TempDir dir;
  int port = FreePort();
  std::vector<std::string> common = {"--max-restarts", "1", "--grace-period", "5s"};
  const std::string say =
      "echo attempt=$TORCHELASTIC_RESTART_COUNT rank=$RANK port=$MASTER_PORT "
      "agent=$TORCHELASTIC_USE_AGENT_STORE";
  Launcher node0(
      dir.path(), "node0",
      NodeArgs(0, 2, port, common,
               "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then sleep 1; exit 75; fi; " + say),
      {});
  Launcher node1(
      dir.path(), "node1",
      NodeArgs(1, 2, port, common,
               "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then exec sleep 120; fi; " + say),
      {});
  EXPECT_EQ(node0.Wait(60s), 0) << node0.log();
  EXPECT_EQ(node1.Wait(60s), 0) << node1.log();
  // Attempt 1 meets at a new store node 0's hetrun hosts (the rendezvous store keeps attempt
  // 0's keys): one port, not MASTER_PORT, on both nodes.
  auto attempt_port = [](const std::string& log, const std::string& rank) -> std::string {
    const std::string head = "attempt=1 rank=" + rank + " port=";
    const size_t at = log.find(head);
    if (at == std::string::npos) return "";
    const size_t from = at + head.size();
    return log.substr(from, log.find(' ', from) - from);
  };
  const std::string port0 = attempt_port(node0.log(), "0");
  ASSERT_FALSE(port0.empty()) << node0.log();
  EXPECT_EQ(port0, attempt_port(node1.log(), "1")) << node1.log();
  EXPECT_NE(port0, std::to_string(port));
  EXPECT_NE(node1.log().find("agent=True"), std::string::npos) << node1.log();
  EXPECT_NE(node1.log().find("job-wide restart: node 0 asked for attempt 1"), std::string::npos)
      << node1.log();
}

TEST(RendezvousFaultsTest, PodGracePeriodShorterThanHetrunsWorstCaseIsWarned) {
  testing::TempDir dir;
  // 20 s for the pod, 30 s of grace period alone: the kubelet's SIGKILL would cut it short.
  Launcher short_pod(dir.path(), "short",
                     {HETRUN_BINARY, "run", "--nproc-per-node", "1", "--", "true"},
                     {{"HETRUN_POD_GRACE_PERIOD", "20s"}});
  EXPECT_EQ(short_pod.Wait(60s), 0) << short_pod.log();
  EXPECT_NE(short_pod.log().find("terminationGracePeriodSeconds (20s"), std::string::npos)
      << short_pod.log();
  Launcher fitting(dir.path(), "fits",
                   {HETRUN_BINARY, "run", "--nproc-per-node", "1", "--", "true"},
                   {{"HETRUN_POD_GRACE_PERIOD", "60s"}});
  EXPECT_EQ(fitting.Wait(60s), 0) << fitting.log();
  EXPECT_EQ(fitting.log().find("terminationGracePeriodSeconds"), std::string::npos)
      << fitting.log();
}

}  // namespace
}  // namespace hetrun

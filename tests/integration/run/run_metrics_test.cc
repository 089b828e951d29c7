// hetrun run --metrics-port: /metrics scraped during a real run (the launcher's figures and the
// runtime's per-rank files written by the workers' tuner loops), the endpoint's answers to
// other requests, and a client that never sends a request not holding up supervision.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <regex>

#include "run_harness.h"

namespace hetrun {
namespace {

using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::RunArgs;
using testing::TempDir;
using testing::WaitUntil;

/// A connected socket to 127.0.0.1:port, or -1.
int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends `request` and returns everything the server answers until it closes ("" on failure).
std::string Exchange(int port, const std::string& request) {
  int fd = Connect(port);
  if (fd < 0) return "";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return "";
  }
  std::string answer;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

std::string Scrape(int port) {
  return Exchange(port, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
}

/// The port from hetrun's "metrics on http://127.0.0.1:PORT/metrics" line (0 until logged).
int LoggedPort(const HetrunProcess& run) {
  std::smatch match;
  std::string err = run.err();
  if (!std::regex_search(err, match, std::regex("metrics on http://127\\.0\\.0\\.1:([0-9]+)/"))) {
    return 0;
  }
  return std::stoi(match[1]);
}

/// The value of the sample `series` (name and labels exactly), or NaN when absent.
double Sample(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(RunMetricsTest, MetricsAreScrapedDuringARealRunWithTheLaunchersAndTheRanksFigures) {
  TempDir dir;
  HetrunProcess run(RunArgs(2, {"--metrics-port", "127.0.0.1:0", "--hang-timeout", "120s"},
                            {"beat", "1", "0", "tune", "3", "20", "sleep", "60000"}),
                    HetrunEnv(dir.path()), dir.path());
  int port = 0;
  ASSERT_TRUE(WaitUntil([&] { return (port = LoggedPort(run)) > 0; })) << run.err();
  std::string text;
  // Both ranks' tuner loops close 3 windows; their files reach the next scrape.
  ASSERT_TRUE(WaitUntil(
      [&] {
        text = Scrape(port);
        return Sample(text, "hetrun_tuner_windows_total{rank=\"0\"}") == 3 &&
               Sample(text, "hetrun_tuner_windows_total{rank=\"1\"}") == 3;
      },
      std::chrono::seconds(60)))
      << text << run.err();
  EXPECT_EQ(text.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_NE(text.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(Sample(text, "hetrun_workers_running{node=\"0\"}"), 2);
  EXPECT_EQ(Sample(text, "hetrun_restarts_total{node=\"0\"}"), 0);
  EXPECT_EQ(Sample(text, "hetrun_last_exit_code{node=\"0\",reason=\"\"}"), -1);
  EXPECT_EQ(Sample(text, "hetrun_rendezvous_complete{node=\"0\"}"), 1);
  EXPECT_EQ(Sample(text, "hetrun_rendezvous_nodes_joined{node=\"0\"}"), 1);
  double age =
      Sample(text, "hetrun_worker_heartbeat_age_seconds{node=\"0\",rank=\"1\",local_rank=\"1\"}");
  EXPECT_GE(age, 0);
  EXPECT_LT(age, 120);
  for (const char* rank : {"0", "1"}) {
    std::string label = std::string("{rank=\"") + rank + "\"}";
    EXPECT_EQ(Sample(text, "hetrun_rank_share_samples" + label), 8) << "one-rank loops take all";
    EXPECT_GT(Sample(text, "hetrun_rank_step_seconds" + label), 0.015);
    EXPECT_GT(Sample(text, "hetrun_rank_samples_per_second" + label), 0);
    EXPECT_GE(Sample(text, "hetrun_rank_barrier_idle_fraction" + label), 0);
    EXPECT_EQ(Sample(text, "hetrun_tuner_share_changes_total" + label), 0);
  }
  EXPECT_NE(text.find("# TYPE hetrun_tuner_windows_total counter"), std::string::npos);
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(), 128 + SIGTERM) << run.err();
}

TEST(RunMetricsTest, OtherPathsMethodsAndMalformedRequestsGetErrorsAndSupervisionGoesOn) {
  TempDir dir;
  HetrunProcess run(RunArgs(1, {"--metrics-port", "127.0.0.1:0"}, {"sleep", "60000"}),
                    HetrunEnv(dir.path()), dir.path());
  int port = 0;
  ASSERT_TRUE(WaitUntil([&] { return (port = LoggedPort(run)) > 0; })) << run.err();
  // A client that connects and never sends a byte, and one that sends half a request.
  int silent = Connect(port);
  int half = Connect(port);
  ASSERT_GE(silent, 0);
  ASSERT_GE(half, 0);
  ASSERT_GT(::send(half, "GET /met", 8, MSG_NOSIGNAL), 0);
  EXPECT_EQ(Exchange(port, "GET /other HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Exchange(port, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(Exchange(port, "garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(Exchange(port, std::string(9000, 'x')).rfind("HTTP/1.1 400", 0), 0u);
  std::string head = Exchange(port, "HEAD /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(head.find("hetrun_workers"), std::string::npos) << "HEAD has no body";
  // Supervision is not held up by the idle clients: SIGTERM still stops the run.
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(std::chrono::seconds(60)), 128 + SIGTERM) << run.err();
  ::close(silent);
  ::close(half);
}

TEST(RunMetricsTest, BadOrTakenMetricsPortsAreConfigurationErrors) {
  TempDir dir;
  HetrunProcess bad_flag(RunArgs(1, {"--metrics-port", "70000"}, {"exit", "0"}),
                         HetrunEnv(dir.path()), dir.path(), "flag");
  EXPECT_EQ(bad_flag.Wait(), 64);
  EXPECT_NE(bad_flag.err().find("--metrics-port '70000'"), std::string::npos) << bad_flag.err();
  auto env = HetrunEnv(dir.path());
  env["HETRUN_METRICS_PORT"] = "nowhere:1";
  HetrunProcess bad_env(RunArgs(1, {}, {"exit", "0"}), env, dir.path(), "env");
  EXPECT_EQ(bad_env.Wait(), 78);
  EXPECT_NE(bad_env.err().find("HETRUN_METRICS_PORT='nowhere:1'"), std::string::npos);
  // A port already taken: exit 78 before any worker starts.
  int taken = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  socklen_t length = sizeof(addr);
  ::getsockname(taken, reinterpret_cast<sockaddr*>(&addr), &length);
  std::string port = std::to_string(ntohs(addr.sin_port));
  HetrunProcess busy(RunArgs(1, {"--metrics-port", "127.0.0.1:" + port}, {"out", "started"}),
                     HetrunEnv(dir.path()), dir.path(), "busy");
  EXPECT_EQ(busy.Wait(), 78) << busy.err();
  EXPECT_NE(busy.err().find("127.0.0.1:" + port), std::string::npos) << busy.err();
  EXPECT_EQ(busy.out().find("started"), std::string::npos);
  ::close(taken);
}

}  // namespace
}  // namespace hetrun

// Signals to `hetrun run`: forwarded once to every worker group, one shutdown, SIGKILL at the
// grace deadline. Timing bounds are generous (a loaded 2-core machine), never tight.
#include <gtest/gtest.h>

#include <algorithm>

#include "run_harness.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::ReadLines;
using testing::RunArgs;
using testing::TempDir;
using testing::WaitUntil;

// Waits until every worker's trap file says "ready".
bool AllReady(const std::string& dir, int n) {
  return WaitUntil([&] {
    for (int rank = 0; rank < n; ++rank) {
      auto lines = ReadLines(dir + "/trap" + std::to_string(rank));
      if (lines.empty() || lines[0] != "ready") return false;
    }
    return true;
  });
}

std::vector<std::string> TrapSteps(const std::string& dir, int n, int checkpoint_ms) {
  std::vector<std::string> steps;
  for (int rank = 0; rank < n; ++rank) {
    steps.insert(steps.end(),
                 {"r" + std::to_string(rank) + ":trap", dir + "/trap" + std::to_string(rank),
                  std::to_string(checkpoint_ms), "0"});
  }
  return steps;
}

TEST(RunSignalsTest, SigtermLetsWorkersCheckpointThenExits143) {
  TempDir dir;
  HetrunProcess run(RunArgs(2, {}, TrapSteps(dir.path(), 2, 2000)), HetrunEnv(dir.path()),
                    dir.path());
  ASSERT_TRUE(AllReady(dir.path(), 2)) << run.err();
  auto sent = std::chrono::steady_clock::now();
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(), 143) << run.err();
  auto after = std::chrono::steady_clock::now() - sent;
  EXPECT_GE(after, 1900ms) << "hetrun must wait for the checkpoint";
  for (int rank = 0; rank < 2; ++rank) {
    auto lines = ReadLines(dir.path() + "/trap" + std::to_string(rank));
    EXPECT_EQ(lines, (std::vector<std::string>{"ready", "15", "done"})) << "rank " << rank;
  }
  EXPECT_NE(testing::ReadFile(dir.path() + "/termination-log").find("SIGTERM"), std::string::npos);
}

TEST(RunSignalsTest, SignalStormGivesOneShutdownAndOneExitCode) {
  TempDir dir;
  HetrunProcess run(RunArgs(2, {}, TrapSteps(dir.path(), 2, 500)), HetrunEnv(dir.path()),
                    dir.path());
  ASSERT_TRUE(AllReady(dir.path(), 2)) << run.err();
  for (int signal : {SIGTERM, SIGINT, SIGTERM, SIGHUP}) {
    run.Signal(signal);
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(run.Wait(), 143) << run.err();
  for (int rank = 0; rank < 2; ++rank) {
    auto lines = ReadLines(dir.path() + "/trap" + std::to_string(rank));
    EXPECT_EQ(lines, (std::vector<std::string>{"ready", "15", "done"})) << "rank " << rank;
  }
  std::string err = run.err();
  size_t forwards = 0;
  for (size_t at = err.find("forwarding it"); at != std::string::npos;
       at = err.find("forwarding it", at + 1)) {
    ++forwards;
  }
  EXPECT_EQ(forwards, 1u) << err;
}

TEST(RunSignalsTest, WorkerIgnoringSigtermIsKilledAtTheDeadline) {
  TempDir dir;
  std::string pids = dir.path() + "/pids";
  HetrunProcess run(
      RunArgs(2, {"--grace-period", "1s"}, {"ignore", "15", "pid", pids, "sleep", "60000"}),
      HetrunEnv(dir.path()), dir.path());
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(pids).size() == 2; })) << run.err();
  auto sent = std::chrono::steady_clock::now();
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(), 143) << run.err();
  auto after = std::chrono::steady_clock::now() - sent;
  EXPECT_GE(after, 900ms) << "SIGKILL must wait for the grace period";
  EXPECT_LE(after, 2000ms) << "hetrun must exit within deadline + 1 s";
  for (const std::string& pid : ReadLines(pids))
    EXPECT_FALSE(testing::ProcessAlive(std::stoi(pid)));
}

TEST(RunSignalsTest, Sigusr1IsForwardedWithoutStoppingTheWorkers) {
  TempDir dir;
  HetrunProcess run(RunArgs(2, {}, TrapSteps(dir.path(), 2, 0)), HetrunEnv(dir.path()), dir.path());
  ASSERT_TRUE(AllReady(dir.path(), 2)) << run.err();
  run.Signal(SIGUSR1);
  ASSERT_TRUE(WaitUntil([&] {
    return ReadLines(dir.path() + "/trap0").size() == 2 &&
           ReadLines(dir.path() + "/trap1").size() == 2;
  })) << run.err();
  run.Signal(SIGINT);
  EXPECT_EQ(run.Wait(), 130) << run.err();
  EXPECT_EQ(ReadLines(dir.path() + "/trap0"),
            (std::vector<std::string>{"ready", "10", "2", "done"}));
}

}  // namespace
}  // namespace hetrun

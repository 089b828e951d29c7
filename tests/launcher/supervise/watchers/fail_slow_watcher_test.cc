// Fail-slow reports driven with explicit times and real report files in a run folder.
#include "supervise/watchers/fail_slow_watcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hetrun/base/exit_code.h"
#include "hetrun/tuner/rank_metrics.h"
#include "run_process.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const WatchClock::time_point kStart = WatchClock::time_point() + std::chrono::hours(1);
const char kReport[] = "rank 3 (family hopper): 266.3 ms at 274 samples\nsecond line\n";

// The tuner's report for `rank` in `run_dir`, as the slow rank leaves it.
std::string WriteReport(const std::string& run_dir, int rank, const std::string& text) {
  std::string path = tuner::FailSlowReportPath(run_dir, rank);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
  return path;
}

FailSlowWatch Watch(const std::string& run_dir, bool exit) {
  return FailSlowWatch{run_dir, exit, 2, {"NVIDIA A100", "NVIDIA H100"}};
}

std::vector<WatchedWorker> Workers(bool running = true) {
  return {{2, 0, running}, {3, 1, running}};
}

// A watcher of Workers() in `run_dir` on node 2, both armed.
FailSlowWatcher Armed(const std::string& run_dir, bool exit) {
  FailSlowWatcher watcher(Watch(run_dir, exit), 2);
  watcher.Arm(0, 2);
  watcher.Arm(1, 3);
  return watcher;
}

TEST(FailSlowWatcherTest, AReportUnderExitStopsTheAttemptWith83NamingNodeAndGpu) {
  testing::TempDir dir;
  FailSlowWatcher watcher = Armed(dir.path(), true);
  WriteReport(dir.path(), 3, kReport);
  std::optional<WatchVerdict> verdict = watcher.Check(kStart, Workers());
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->stuck);
  EXPECT_EQ(verdict->failure.kind, WorkerFailure::Kind::kFailSlow);
  EXPECT_EQ(verdict->failure.exit_code, kExitFailSlow);
  EXPECT_EQ(verdict->failure.rank, 3);
  EXPECT_EQ(verdict->failure.local_rank, 1);
  EXPECT_EQ(verdict->failure.detail,
            "on node 2, GPU NVIDIA H100 rank 3 (family hopper): 266.3 ms at 274 samples");
}

TEST(FailSlowWatcherTest, UnderWarnAReportIsLoggedOnceAndTheAttemptGoesOn) {
  testing::TempDir dir;
  FailSlowWatcher watcher = Armed(dir.path(), false);
  WriteReport(dir.path(), 3, kReport);
  EXPECT_FALSE(watcher.Check(kStart, Workers()));
  EXPECT_FALSE(watcher.Check(kStart + seconds(1), Workers()));
}

TEST(FailSlowWatcherTest, ArmRemovesTheReportOfAnAttemptBefore) {
  testing::TempDir dir;
  std::string path = WriteReport(dir.path(), 2, kReport);
  FailSlowWatcher watcher(Watch(dir.path(), true), 2);
  watcher.Arm(0, 2);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(watcher.Check(kStart, Workers()));
}

TEST(FailSlowWatcherTest, ReadsTheReportsOnceASecond) {
  testing::TempDir dir;
  FailSlowWatcher watcher = Armed(dir.path(), true);
  EXPECT_EQ(watcher.NextCheck(), WatchClock::time_point());  // at once
  EXPECT_FALSE(watcher.Check(kStart, Workers()));
  EXPECT_EQ(watcher.NextCheck(), kStart + seconds(1));
  WriteReport(dir.path(), 2, kReport);
  EXPECT_FALSE(watcher.Check(kStart + milliseconds(999), Workers()));
  std::optional<WatchVerdict> verdict = watcher.Check(kStart + seconds(1), Workers());
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->failure.rank, 2);
  EXPECT_NE(verdict->failure.detail.find("GPU NVIDIA A100"), std::string::npos);
}

TEST(FailSlowWatcherTest, AReportBehindASymlinkIsNotRead) {
  testing::TempDir dir;
  FailSlowWatcher watcher(Watch(dir.path(), true), 2);
  watcher.Arm(0, 2);
  std::string elsewhere = dir.WriteFile("elsewhere", kReport);
  std::string path = tuner::FailSlowReportPath(dir.path(), 2);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_EQ(::symlink(elsewhere.c_str(), path.c_str()), 0);
  EXPECT_FALSE(watcher.Check(kStart, Workers()));
}

TEST(FailSlowWatcherTest, AReportOfAWorkerNoLongerRunningIsIgnored) {
  testing::TempDir dir;
  FailSlowWatcher watcher(Watch(dir.path(), true), 2);
  watcher.Arm(0, 2);
  WriteReport(dir.path(), 2, kReport);
  EXPECT_FALSE(watcher.Check(kStart, Workers(false)));
}

TEST(FailSlowWatcherTest, AGpuWithoutANameIsUnknown) {
  testing::TempDir dir;
  FailSlowWatcher watcher(FailSlowWatch{dir.path(), true, 0, {}}, 1);
  watcher.Arm(0, 5);
  WriteReport(dir.path(), 5, "rank 5 slow\n");
  std::optional<WatchVerdict> verdict = watcher.Check(kStart, {{{5, 0, true}}});
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->failure.detail, "on node 0, GPU unknown rank 5 slow");
}

TEST(FailSlowWatcherTest, WithoutWorkersNothingIsTimed) {
  testing::TempDir dir;
  FailSlowWatcher watcher(Watch(dir.path(), true), 0);
  EXPECT_FALSE(watcher.NextCheck());
}

}  // namespace
}  // namespace hetrun::launcher

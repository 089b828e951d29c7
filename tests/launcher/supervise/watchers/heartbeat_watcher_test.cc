// Hang detection driven with explicit times on the monotonic clock and real heartbeat files.
#include "supervise/watchers/heartbeat_watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "hetrun/base/exit_code.h"
#include "run_process.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const WatchClock::time_point kStart = WatchClock::time_point() + std::chrono::hours(1);

// One worker (rank 4, local rank 0) with a 10 s hang timeout, armed at kStart.
class HeartbeatWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> armed = watcher_.Arm(0, 0, kStart);
    ASSERT_TRUE(armed.ok()) << armed.status().message();
    path_ = *armed;
  }
  std::optional<WatchVerdict> CheckAt(WatchClock::time_point now, bool running = true) {
    return watcher_.Check(now, {{{4, 0, running}}});
  }
  // The silence of the hang found at `now`; zero when none is.
  milliseconds HangAt(WatchClock::time_point now) {
    std::optional<WatchVerdict> verdict = CheckAt(now);
    return verdict ? verdict->failure.silence : milliseconds(0);
  }

  testing::TempDir dir_;
  HeartbeatWatcher watcher_{dir_.path(), seconds(10), 1};
  std::string path_;
};

TEST_F(HeartbeatWatcherTest, ArmMakesAnEmptyFileNamedAfterTheLocalRank) {
  EXPECT_EQ(path_, dir_.path() + "/heartbeat/rank_0");
  struct stat info {};
  ASSERT_EQ(::stat(path_.c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 0);
}

TEST_F(HeartbeatWatcherTest, ArmEmptiesTheFileOfAnAttemptBefore) {
  std::ofstream(path_) << "beats of the attempt before";
  ASSERT_TRUE(watcher_.Arm(0, 0, kStart).ok());
  struct stat info {};
  ASSERT_EQ(::stat(path_.c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 0);
}

TEST_F(HeartbeatWatcherTest, ASilentRunningWorkerIsAHangOnlyPastTheTimeout) {
  EXPECT_FALSE(CheckAt(kStart + seconds(10)));  // silent for exactly the timeout
  std::optional<WatchVerdict> verdict = CheckAt(kStart + seconds(11));
  ASSERT_TRUE(verdict);
  EXPECT_TRUE(verdict->stuck);
  EXPECT_EQ(verdict->failure.kind, WorkerFailure::Kind::kHang);
  EXPECT_EQ(verdict->failure.rank, 4);
  EXPECT_EQ(verdict->failure.local_rank, 0);
  EXPECT_EQ(verdict->failure.exit_code, kExitTransient);
  EXPECT_EQ(verdict->failure.silence, seconds(11));
  EXPECT_EQ(verdict->failure.hang_timeout, seconds(10));
}

TEST_F(HeartbeatWatcherTest, AChangeOfTheFileCountsTheSilenceFromWhenItWasSeen) {
  std::ofstream(path_, std::ios::app) << "x";
  EXPECT_EQ(HangAt(kStart + seconds(8)), milliseconds(0));  // the beat, seen now
  EXPECT_EQ(HangAt(kStart + seconds(18)), milliseconds(0));
  EXPECT_EQ(HangAt(kStart + seconds(19)), seconds(11));
}

TEST_F(HeartbeatWatcherTest, AFileTimeInTheFutureIsOneBeatNotAnEndlessOne) {
  timespec future[2] = {{::time(nullptr) + 86400, 0}, {::time(nullptr) + 86400, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path_.c_str(), future, 0), 0);
  EXPECT_EQ(HangAt(kStart + seconds(5)), milliseconds(0));
  EXPECT_EQ(HangAt(kStart + seconds(16)), seconds(11));
}

TEST_F(HeartbeatWatcherTest, AWorkerThatIsNotRunningIsNotWatched) {
  EXPECT_FALSE(CheckAt(kStart + seconds(60), false));
}

TEST_F(HeartbeatWatcherTest, LooksAtMostOnceASecond) {
  EXPECT_EQ(watcher_.NextCheck(), WatchClock::time_point());         // at once
  EXPECT_EQ(HangAt(kStart + milliseconds(9'500)), milliseconds(0));  // not yet silent enough
  EXPECT_EQ(watcher_.NextCheck(), kStart + milliseconds(10'500));
  EXPECT_EQ(HangAt(kStart + milliseconds(10'400)), milliseconds(0));  // silent, not looked at
  EXPECT_EQ(HangAt(kStart + milliseconds(10'500)), milliseconds(10'500));
}

TEST_F(HeartbeatWatcherTest, SecondsSinceBeatIsUnknownBeforeArm) {
  EXPECT_DOUBLE_EQ(watcher_.SecondsSinceBeat(0, kStart + milliseconds(1500)), 1.5);
  HeartbeatWatcher unarmed(dir_.path(), seconds(10), 1);
  EXPECT_DOUBLE_EQ(unarmed.SecondsSinceBeat(0, kStart + milliseconds(1500)), -1);
}

TEST(HeartbeatWatcherIntervalTest, ShortTimeoutsAreLookedAtEveryQuarterOfIt) {
  testing::TempDir dir;
  HeartbeatWatcher watcher(dir.path(), seconds(2), 1);
  EXPECT_FALSE(watcher.Check(kStart, {{{0, 0, true}}}));
  EXPECT_EQ(watcher.NextCheck(), kStart + milliseconds(500));
}

TEST(HeartbeatWatcherArmTest, FailsNamingTheFolderWhenTheRunFolderIsAFile) {
  testing::TempDir dir;
  std::string file = dir.WriteFile("not_a_folder", "");
  HeartbeatWatcher watcher(file, seconds(10), 1);
  Result<std::string> path = watcher.Arm(0, 0, kStart);
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find(file + "/heartbeat"), std::string::npos)
      << path.status().message();
}

// Issue 39 item 14: one timeout for start-up and every step had to cover model loading, so a
// hung step went unseen for as long. The start-up timeout holds until the first beat only.
TEST(HeartbeatWatcherStartupTest, AShortStepTimeoutSeesAHungStepWhileStartUpTakesLonger) {
  testing::TempDir dir;
  HeartbeatWatcher watcher(dir.path(), seconds(2), 1, seconds(60));
  Result<std::string> path = watcher.Arm(0, 0, kStart);
  ASSERT_TRUE(path.ok());
  auto check = [&](WatchClock::time_point now) { return watcher.Check(now, {{{0, 0, true}}}); };
  EXPECT_FALSE(check(kStart + seconds(30))) << "loading the model for 30 s is no hang";
  std::ofstream(*path, std::ios::app) << "x";  // the first step's beat
  EXPECT_FALSE(check(kStart + seconds(31)));
  EXPECT_FALSE(check(kStart + seconds(33)));
  std::optional<WatchVerdict> hung = check(kStart + milliseconds(33'500));
  ASSERT_TRUE(hung) << "a step silent past the 2 s per-step timeout is a hang";
  EXPECT_EQ(hung->failure.hang_timeout, seconds(2));
  EXPECT_FALSE(hung->failure.before_first_beat);
  EXPECT_EQ(hung->failure.exit_code, kExitTransient);
  // A restarted worker starts over: the start-up timeout again, then a hang before any beat.
  ASSERT_TRUE(watcher.Arm(0, 0, kStart + seconds(40)).ok());
  EXPECT_FALSE(check(kStart + seconds(99)));
  std::optional<WatchVerdict> never = check(kStart + seconds(101));
  ASSERT_TRUE(never);
  EXPECT_TRUE(never->failure.before_first_beat);
  EXPECT_EQ(never->failure.hang_timeout, seconds(60));
}

TEST(HeartbeatWatcherStartupTest, AStartupTimeoutAloneWatchesOnlyTheFirstBeat) {
  testing::TempDir dir;
  HeartbeatWatcher watcher(dir.path(), milliseconds(0), 1, seconds(4));
  Result<std::string> path = watcher.Arm(0, 0, kStart);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ((watcher.Check(kStart, {{{0, 0, true}}}), watcher.NextCheck()), kStart + seconds(1));
  std::ofstream(*path, std::ios::app) << "x";
  EXPECT_FALSE(watcher.Check(kStart + seconds(1), {{{0, 0, true}}}));
  EXPECT_FALSE(watcher.Check(kStart + seconds(600), {{{0, 0, true}}}));
}

}  // namespace
}  // namespace hetrun::launcher

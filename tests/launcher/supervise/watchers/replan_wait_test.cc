// --replan-restart's wait driven with explicit times and a real checkpoint folder.
#include "supervise/watchers/replan_wait.h"

#include <gtest/gtest.h>

#include "hetrun/base/exit_code.h"
#include "run_process.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const WatchClock::time_point kStart = WatchClock::time_point() + std::chrono::hours(1);

WorkerFailure Exit(int rank, int code) {
  WorkerFailure failure;
  failure.rank = rank;
  failure.local_rank = rank;
  failure.exit_code = code;
  return failure;
}

TEST(ReplanWaitTest, Every82WithACompleteCheckpointIsAnAgreedReplan) {
  testing::TempDir dir;
  dir.WriteFile(".metadata", "dcp");
  ReplanWait wait(seconds(30), dir.path());
  EXPECT_FALSE(wait.open());
  EXPECT_EQ(wait.OnWorkerExit(Exit(0, 82), kStart).step, ReplanWait::Step::kOpened);
  EXPECT_TRUE(wait.open());
  EXPECT_EQ(wait.OnWorkerExit(Exit(1, 82), kStart + seconds(1)).step, ReplanWait::Step::kJoined);
  WorkerFailure failure = wait.Finish();
  EXPECT_TRUE(failure.replan_agreed);
  EXPECT_EQ(failure.rank, 0);  // the first 82
  EXPECT_EQ(failure.exit_code, kExitReplanRequested);
  EXPECT_FALSE(wait.NextCheck());
}

TEST(ReplanWaitTest, AnIncompleteCheckpointIsAnOrdinaryFailureNamingTheFolder) {
  testing::TempDir dir;
  ReplanWait wait(seconds(30), dir.path());
  wait.OnWorkerExit(Exit(0, 82), kStart);
  WorkerFailure failure = wait.Finish();
  EXPECT_FALSE(failure.replan_agreed);
  EXPECT_EQ(failure.detail, "every local worker exited 82, but the checkpoint " + dir.path() +
                                " is not complete (no .metadata)");
}

TEST(ReplanWaitTest, WithoutACheckpointFolderEvery82Agrees) {
  ReplanWait wait(seconds(30), "");
  wait.OnWorkerExit(Exit(0, 82), kStart);
  EXPECT_TRUE(wait.Finish().replan_agreed);
}

TEST(ReplanWaitTest, AZeroDuringTheWaitBreaksIt) {
  ReplanWait wait(seconds(30), "");
  wait.OnWorkerExit(Exit(0, 82), kStart);
  ReplanWait::ExitStep step = wait.OnWorkerExit(Exit(1, 0), kStart + seconds(1));
  EXPECT_EQ(step.step, ReplanWait::Step::kBroken);
  EXPECT_EQ(step.broken.rank, 0);
  EXPECT_EQ(step.broken.detail,
            "rank 1 exited with code 0 instead of 82 (every worker must exit 82)");
  EXPECT_FALSE(wait.NextCheck());
}

TEST(ReplanWaitTest, An82AfterAZeroBreaksIt) {
  ReplanWait wait(seconds(30), "");
  EXPECT_EQ(wait.OnWorkerExit(Exit(0, 0), kStart).step, ReplanWait::Step::kOrdinary);
  ReplanWait::ExitStep step = wait.OnWorkerExit(Exit(1, 82), kStart + seconds(1));
  EXPECT_EQ(step.step, ReplanWait::Step::kBroken);
  EXPECT_EQ(step.broken.rank, 1);
  EXPECT_EQ(step.broken.detail, "rank 0 exited with code 0 before (every worker must exit 82)");
  EXPECT_FALSE(wait.open());
}

TEST(ReplanWaitTest, OtherCodesTakeTheOrdinaryPathDuringTheWaitToo) {
  ReplanWait wait(seconds(30), "");
  EXPECT_EQ(wait.OnWorkerExit(Exit(0, 1), kStart).step, ReplanWait::Step::kOrdinary);
  wait.OnWorkerExit(Exit(1, 82), kStart);
  EXPECT_EQ(wait.OnWorkerExit(Exit(2, 75), kStart).step, ReplanWait::Step::kOrdinary);
  WorkerFailure killed = Exit(3, 82);
  killed.kind = WorkerFailure::Kind::kSignaled;  // 82 as a code only counts from an exit
  EXPECT_EQ(wait.OnWorkerExit(killed, kStart).step, ReplanWait::Step::kOrdinary);
}

TEST(ReplanWaitTest, AWorkerStillRunningAtTheEndOfTheWaitFailsIt) {
  ReplanWait wait(seconds(5), "");
  EXPECT_FALSE(wait.NextCheck());
  wait.OnWorkerExit(Exit(0, 82), kStart);
  EXPECT_EQ(wait.NextCheck(), kStart + seconds(5));
  std::vector<WatchedWorker> workers{{0, 0, false}, {1, 1, true}, {2, 2, true}};
  EXPECT_FALSE(wait.Check(kStart + seconds(5) - milliseconds(1), workers));
  std::optional<WatchVerdict> verdict = wait.Check(kStart + seconds(5), workers);
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->stuck);
  EXPECT_EQ(verdict->failure.rank, 0);
  EXPECT_EQ(verdict->failure.detail,
            "rank(s) 1, 2 did not exit within the grace period (5s) after it");
  EXPECT_FALSE(wait.Check(kStart + seconds(6), workers));  // decided once
  EXPECT_FALSE(wait.NextCheck());
}

TEST(ReplanWaitTest, AnotherNodesReplanOpensTheWaitForTheLocal82s) {
  ReplanWait wait(seconds(30), "");
  WorkerFailure restart;
  restart.kind = WorkerFailure::Kind::kJobRestart;
  restart.exit_code = kExitTransient;
  restart.detail = "node 1 asked for attempt 1";
  wait.OnJobReplan(restart, kStart);
  EXPECT_TRUE(wait.open());
  EXPECT_EQ(wait.NextCheck(), kStart + seconds(30));
  EXPECT_EQ(wait.OnWorkerExit(Exit(0, 82), kStart).step, ReplanWait::Step::kJoined);
  WorkerFailure failure = wait.Finish();
  EXPECT_TRUE(failure.replan_agreed);
  EXPECT_EQ(failure.kind, WorkerFailure::Kind::kJobRestart);
}

}  // namespace
}  // namespace hetrun::launcher

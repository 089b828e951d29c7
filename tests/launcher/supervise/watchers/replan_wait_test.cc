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

TEST(ReplanWaitTest, Every82WithACheckpointPublishedThisAttemptIsAnAgreedReplan) {
  testing::TempDir dir;
  dir.WriteFile("step-4-aa/.metadata", "dcp");
  dir.WriteFile("hetrun-latest", "step-4-aa\n");
  ReplanWait wait(seconds(30), dir.path());  // the attempt starts on step-4-aa
  dir.WriteFile("step-8-bb/.metadata", "dcp");
  dir.WriteFile("hetrun-latest", "step-8-bb\n");  // its workers publish step-8-bb
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

TEST(ReplanWaitTest, NoPublishedCheckpointIsAnOrdinaryFailureNamingTheFolder) {
  testing::TempDir dir;
  ReplanWait wait(seconds(30), dir.path());
  wait.OnWorkerExit(Exit(0, 82), kStart);
  WorkerFailure failure = wait.Finish();
  EXPECT_FALSE(failure.replan_agreed);
  EXPECT_EQ(failure.detail, "every local worker exited 82, but the checkpoint " + dir.path() +
                                " is not complete: no " + dir.path() +
                                "/hetrun-latest (no checkpoint was published)");
}

// A complete checkpoint from an earlier run (days old) that no worker of this attempt wrote:
// workers that exit 82 without saving are not restarted on it.
TEST(ReplanWaitTest, ACheckpointLeftFromBeforeTheAttemptDoesNotCount) {
  testing::TempDir dir;
  dir.WriteFile(".metadata", "dcp");  // the old layout's file, too
  dir.WriteFile("step-4-aa/.metadata", "dcp");
  dir.WriteFile("hetrun-latest", "step-4-aa\n");
  ReplanWait wait(seconds(30), dir.path());
  wait.OnWorkerExit(Exit(0, 82), kStart);
  WorkerFailure failure = wait.Finish();
  EXPECT_FALSE(failure.replan_agreed);
  EXPECT_NE(failure.detail.find("still names 'step-4-aa', as when the attempt started"),
            std::string::npos)
      << failure.detail;
}

// A save cut short: the pointer names a folder whose DCP .metadata was never written.
TEST(ReplanWaitTest, APointerToAFolderWithoutMetadataIsNotComplete) {
  testing::TempDir dir;
  ReplanWait wait(seconds(30), dir.path());
  dir.WriteFile("step-8-bb/__0_0.distcp", "part");
  dir.WriteFile("hetrun-latest", "step-8-bb\n");
  wait.OnWorkerExit(Exit(0, 82), kStart);
  WorkerFailure failure = wait.Finish();
  EXPECT_FALSE(failure.replan_agreed);
  EXPECT_NE(failure.detail.find("names 'step-8-bb', which is not complete (no " + dir.path() +
                                "/step-8-bb/.metadata)"),
            std::string::npos)
      << failure.detail;
}

TEST(ReplanWaitTest, APointerOutsideTheFolderIsNotComplete) {
  testing::TempDir dir;
  ReplanWait wait(seconds(30), dir.path());
  dir.WriteFile("hetrun-latest", "../elsewhere\n");
  wait.OnWorkerExit(Exit(0, 82), kStart);
  WorkerFailure failure = wait.Finish();
  EXPECT_FALSE(failure.replan_agreed);
  EXPECT_NE(failure.detail.find("names '../elsewhere', not a sub-folder of"), std::string::npos)
      << failure.detail;
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

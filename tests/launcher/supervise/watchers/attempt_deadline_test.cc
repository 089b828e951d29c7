// The attempt deadline driven with explicit times.
#include "supervise/watchers/attempt_deadline.h"

#include <gtest/gtest.h>

#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const WatchClock::time_point kStart = WatchClock::time_point() + std::chrono::hours(1);

TEST(AttemptDeadlineTest, NothingBeforeTheDeadline) {
  AttemptDeadline deadline(kStart, seconds(60));
  EXPECT_EQ(deadline.NextCheck(), kStart + seconds(60));
  EXPECT_FALSE(deadline.Check(kStart + seconds(60) - milliseconds(1), {}));
}

TEST(AttemptDeadlineTest, AtTheDeadlineEveryWorkerIsStoppedLikeAHang) {
  AttemptDeadline deadline(kStart, seconds(60));
  std::vector<WatchedWorker> workers{{0, 0, true}, {1, 1, true}};
  std::optional<WatchVerdict> verdict = deadline.Check(kStart + seconds(60), workers);
  ASSERT_TRUE(verdict);
  EXPECT_TRUE(verdict->stuck);
  EXPECT_EQ(verdict->failure.kind, WorkerFailure::Kind::kDeadline);
  EXPECT_EQ(verdict->failure.exit_code, kExitTransient);
  EXPECT_EQ(verdict->failure.hang_timeout, seconds(60));
  EXPECT_EQ(verdict->failure.rank, -1);  // the attempt, not one worker
}

}  // namespace
}  // namespace hetrun::launcher

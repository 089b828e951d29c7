#include "exit_code.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace hetrun::launcher {
namespace {

TEST(ExitCodeTest, MapsEveryStatusCodeToTheContract) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(UsageError("x")), 64);
  EXPECT_EQ(ExitCodeFor(InvalidArgumentError("x")), 78);
  EXPECT_EQ(ExitCodeFor(NotFoundError("x")), 78);
  EXPECT_EQ(ExitCodeFor(FailedPreconditionError("x")), 78);
  EXPECT_EQ(ExitCodeFor(UnavailableError("x")), 75);
  EXPECT_EQ(ExitCodeFor(DeadlineExceededError("x")), 75);
  EXPECT_EQ(ExitCodeFor(ArchMismatchError("x")), 80);
  EXPECT_EQ(ExitCodeFor(ResourceExhaustedError("x")), 81);
  EXPECT_EQ(ExitCodeFor(InternalError("x")), 70);
}

TEST(ExitCodeTest, WaitStatusPassesCodesThroughAndAddsSignalsTo128) {
  for (int code = 0; code < 256; ++code) {
    EXPECT_EQ(ExitCodeForWaitStatus(code << 8), code);  // W_EXITCODE(code, 0)
  }
  EXPECT_EQ(ExitCodeForWaitStatus(SIGKILL), 137);
  EXPECT_EQ(ExitCodeForWaitStatus(SIGTERM), 143);
}

}  // namespace
}  // namespace hetrun::launcher

// The forked-child helper the GPU probe and the driver-load check share: real forks.
#include "preflight/child_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;

TEST(ChildOutputTest, ReturnsWhatTheChildProduced) {
  Result<std::string> text = OutputOfForkedChild("echo child", milliseconds(30'000), [] {
    return std::string("gpu 0 9 0\n") + std::string(100'000, 'x');  // more than a pipe holds
  });
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->substr(0, 10), "gpu 0 9 0\n");
  EXPECT_EQ(text->size(), 100'010u);
}

TEST(ChildOutputTest, AHungChildIsKilledAtTheDeadlineAndNamed) {
  Result<std::string> text = OutputOfForkedChild(
      "sleepy check", milliseconds(1000),
      [] {
        ::sleep(60);
        return std::string("late");
      },
      " (is it hung?)");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(text.status().message(), "sleepy check did not finish in 1 s (is it hung?)");
}

TEST(ChildOutputTest, ACrashingChildIsAnInternalErrorWithItsWaitStatus) {
  Result<std::string> text = OutputOfForkedChild("crashy check", milliseconds(30'000), [] {
    std::_Exit(9);
    return std::string();
  });
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInternal);
  EXPECT_EQ(text.status().message(), "crashy check child failed (wait status 2304)");  // 9 << 8
}

}  // namespace
}  // namespace hetrun::launcher

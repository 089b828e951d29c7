#include "supervise/report/termination_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "run_process.h"

namespace hetrun::launcher {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TerminationLogTest, WritesReasonToConfiguredPath) {
  testing::TempDir dir;
  std::string path = dir.path() + "/termination-log";
  Environment env({{"HETRUN_TERMINATION_LOG", path}});
  ASSERT_TRUE(WriteTerminationLog(env, "rank 3 exited with 137 (SIGKILL)").ok());
  EXPECT_EQ(ReadAll(path), "rank 3 exited with 137 (SIGKILL)");
  ASSERT_TRUE(WriteTerminationLog(env, "second").ok());
  EXPECT_EQ(ReadAll(path), "second");  // truncated, not appended
}

TEST(TerminationLogTest, CutsAt4096BytesWithoutSplittingUtf8) {
  testing::TempDir dir;
  std::string path = dir.path() + "/log";
  std::string reason;
  while (reason.size() < 5000) reason += "\xe6\x9c\xa8";  // a 3-byte character
  ASSERT_TRUE(WriteTerminationLog(Environment({{"HETRUN_TERMINATION_LOG", path}}), reason).ok());
  std::string written = ReadAll(path);
  EXPECT_LE(written.size(), kTerminationLogMaxBytes);
  EXPECT_EQ(written.size() % 3, 0u);
  EXPECT_GT(written.size(), kTerminationLogMaxBytes - 3);
}

TEST(TerminationLogTest, EmptyPathDisablesAndUnwritablePathIsAnError) {
  EXPECT_TRUE(WriteTerminationLog(Environment({{"HETRUN_TERMINATION_LOG", ""}}), "x").ok());
  Status bad = WriteTerminationLog(
      Environment({{"HETRUN_TERMINATION_LOG", "/nonexistent-dir/sub/log"}}), "x");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent-dir/sub/log"), std::string::npos);
}

TEST(TerminationLogTest, TruncateUtf8KeepsShortTextWhole) {
  EXPECT_EQ(TruncateUtf8("abc", 10), "abc");
  EXPECT_EQ(TruncateUtf8("ab\xc3\xa9", 3), "ab");
}

}  // namespace
}  // namespace hetrun::launcher

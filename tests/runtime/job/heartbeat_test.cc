#include "hetrun/job/heartbeat.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <cstdio>
#include <filesystem>

namespace hetrun {
namespace {

TEST(HeartbeatTest, UnsetVariableIsANoOp) {
  EXPECT_TRUE(Beat(Environment()).ok());
  EXPECT_TRUE(Beat(Environment({{"HETRUN_HEARTBEAT", ""}})).ok());
}

TEST(HeartbeatTest, BeatMovesTheFilesModificationTimeToNow) {
  std::string path = std::filesystem::temp_directory_path() / "hetrun-heartbeat-test";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  utimbuf old{1000, 1000};
  ASSERT_EQ(utime(path.c_str(), &old), 0);
  ASSERT_TRUE(Beat(Environment({{"HETRUN_HEARTBEAT", path}})).ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_GT(st.st_mtime, time(nullptr) - 60);
  std::filesystem::remove(path);
}

TEST(HeartbeatTest, MissingFileIsAnErrorNamingThePathAndNeverCreatesIt) {
  Status s = Beat(Environment({{"HETRUN_HEARTBEAT", "/nonexistent/hetrun/beat"}}));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/hetrun/beat"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace hetrun

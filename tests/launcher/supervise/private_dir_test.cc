#include "supervise/private_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace hetrun::launcher {
namespace {

class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hetrun_private_XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  mode_t Mode(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
    return info.st_mode & 0777;
  }
  std::string dir_;
};

// Issue 28 item 6: the stream logs' folders were made with plain mkdir in a shared folder.
TEST_F(PrivateDirTest, FoldersAreMadeForThisUserOnly) {
  const std::string deep = dir_ + "/logs/job_1/attempt_0/0";
  ASSERT_TRUE(MakePrivateDirs(dir_, deep, "--tee/--redirects").ok());
  for (const std::string& d : {dir_ + "/logs", dir_ + "/logs/job_1", deep}) {
    EXPECT_EQ(Mode(d), 0700u) << d;
  }
  EXPECT_TRUE(MakePrivateDirs(dir_, deep, "--tee/--redirects").ok()) << "again: accepted";
}

TEST_F(PrivateDirTest, AnOpenFolderOfThisUserIsClosedAndASymlinkIsRefused) {
  const std::string open = dir_ + "/open";
  ASSERT_EQ(::mkdir(open.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  ASSERT_TRUE(MakePrivateDir(open, "logs").ok());
  EXPECT_EQ(Mode(open), 0700u);
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(open.c_str(), link.c_str()), 0);
  Status refused = MakePrivateDir(link, "--tee/--redirects");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find(link + " exists and is not a directory (a symlink?)"),
            std::string::npos)
      << refused.message();
}

TEST_F(PrivateDirTest, AnotherUsersFolderIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a folder of another user";
  const std::string theirs = dir_ + "/theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 0777), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 12345, 12345), 0);
  Status refused = MakePrivateDir(theirs, "--tee/--redirects");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("belongs to uid 12345"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace hetrun::launcher

#include "hetrun/base/atomic_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hetrun {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hetrun_atomic_XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// Issue 28 item 14: PATH.tmp was opened with O_CREAT|O_TRUNC, following a planted symlink.
TEST_F(AtomicFileTest, APlantedSymlinkOrFileAtPathTmpIsLeftAlone) {
  const std::string path = dir_ + "/file.json", victim = dir_ + "/victim";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "new\n", "test file").ok());
  EXPECT_EQ(Read(victim), "precious\n");
  EXPECT_EQ(Read(path), "new\n");
  EXPECT_TRUE(std::filesystem::is_symlink(path + ".tmp")) << "someone else's entry stays";
}

TEST_F(AtomicFileTest, ASymlinkAtThePathItselfIsReplacedNotWrittenThrough) {
  const std::string path = dir_ + "/file.json", victim = dir_ + "/victim";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "new\n", "test file").ok());
  EXPECT_EQ(Read(victim), "precious\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  EXPECT_EQ(Read(path), "new\n");
}

TEST_F(AtomicFileTest, TheFileGetsTheModeAndNoTemporaryIsLeft) {
  const std::string path = dir_ + "/file.json";
  ASSERT_TRUE(WriteFileAtomically(path, "one\n", "test file", 0600).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "two\n", "test file", 0600).ok());
  EXPECT_EQ(Read(path), "two\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
  Status missing = WriteFileAtomically(dir_ + "/no/file.json", "x", "test file");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("test file"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("open("), std::string::npos) << missing.message();
}

}  // namespace
}  // namespace hetrun

#include "supervise/run_folder.h"

#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace hetrun::launcher {
namespace {

namespace fs = std::filesystem;

std::string MakeBase() {
  std::string base = fs::temp_directory_path().string() + "/hetrun_run_folder_XXXXXX";
  EXPECT_NE(::mkdtemp(base.data()), nullptr);
  return base + "/runs";
}

TEST(RunFolderTest, AFolderWhoseHetrunIsGoneIsRemovedAndALiveOneKept) {
  const std::string base = MakeBase();
  Result<std::unique_ptr<RunFolder>> live = RunFolder::Create(base);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  // A run folder whose lock nobody holds: its hetrun was killed.
  fs::create_directories(base + "/run-dead00");
  std::ofstream(base + "/run-dead00/.lock").put('x');
  EXPECT_EQ(RemoveStaleRunFolders(base), 1);
  EXPECT_FALSE(fs::exists(base + "/run-dead00"));
  EXPECT_TRUE(fs::exists((*live)->path() + "/.lock"));
  const std::string path = (*live)->path();
  live->reset();
  EXPECT_FALSE(fs::exists(path)) << "removed when its hetrun ends";
  fs::remove_all(fs::path(base).parent_path());
}

// hetruns that start at once sweep each other's base: a sweep must never take a folder that is
// being created (its lock not yet held) for a stale one.
TEST(RunFolderTest, ASweepDuringCreationNeverRemovesTheNewFolder) {
  const std::string base = MakeBase();
  ASSERT_TRUE(RunFolder::Create(base).ok());  // the base exists
  std::atomic<bool> done{false};
  std::atomic<int> removed{0};
  std::thread sweeper([&] {
    while (!done) removed += RemoveStaleRunFolders(base);
  });
  int failures = 0, vanished = 0;
  for (int i = 0; i < 400; ++i) {
    Result<std::unique_ptr<RunFolder>> folder = RunFolder::Create(base);
    if (!folder.ok()) {
      ++failures;
      continue;
    }
    if (!fs::exists((*folder)->path() + "/.lock")) ++vanished;
  }
  done = true;
  sweeper.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(vanished, 0);
  EXPECT_EQ(removed, 0) << "every folder was removed by its own RunFolder";
  fs::remove_all(fs::path(base).parent_path());
}

}  // namespace
}  // namespace hetrun::launcher

// One worker fails -> the others are stopped, the code is passed through; orphans are reaped.
#include <dirent.h>
#include <gtest/gtest.h>

#include "run_harness.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::ReadLines;
using testing::RunArgs;
using testing::TempDir;
using testing::WaitUntil;

TEST(RunFailureTest, SigkillOfOneWorkerStopsSiblingsAndExits137) {
  TempDir dir;
  std::string pids = dir.path() + "/pids";
  std::string trap = dir.path() + "/trap0";
  HetrunProcess run(RunArgs(2, {},
                            {"r1:err", "rank one was here", "r1:pid", pids, "r1:sleep", "60000",
                             "r0:trap", trap, "0", "0"}),
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(pids).size() == 1 && !ReadLines(trap).empty(); }))
      << run.err();
  auto killed = std::chrono::steady_clock::now();
  kill(std::stoi(ReadLines(pids)[0]), SIGKILL);
  EXPECT_EQ(run.Wait(), 137) << run.err();
  // The sibling got SIGTERM at once, not at the 30 s grace deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
  EXPECT_EQ(ReadLines(trap), (std::vector<std::string>{"ready", "15", "done"}));
  std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("SIGKILL"), std::string::npos) << log;
  EXPECT_NE(log.find("rank one was here"), std::string::npos) << log;
  EXPECT_LE(log.size(), 4096u);
  EXPECT_NE(run.err().find("rank 1"), std::string::npos) << run.err();
}

// Zombie children of `parent` (state Z in /proc/<pid>/stat).
std::vector<pid_t> ZombieChildren(pid_t parent) {
  std::vector<pid_t> zombies;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return zombies;
  while (dirent* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(atoi(entry->d_name));
    if (pid <= 0) continue;
    std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent &&
        state == 'Z') {
      zombies.push_back(pid);
    }
  }
  closedir(proc);
  return zombies;
}

TEST(RunFailureTest, OrphanedGrandchildrenAreReapedWhileWorkersRun) {
  TempDir dir;
  std::string orphans = dir.path() + "/orphans";
  HetrunProcess run(RunArgs(2, {}, {"daemon", orphans, "3", "sleep", "1500"}),
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(orphans).size() == 6; })) << run.err();
  // Each orphan exits 100 ms after it starts; hetrun (the subreaper) must reap it.
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (const std::string& pid : ReadLines(orphans)) {
          if (std::ifstream("/proc/" + pid + "/stat")) return false;
        }
        return true;
      },
      5s));
  EXPECT_TRUE(ZombieChildren(run.pid()).empty());
  EXPECT_EQ(run.Wait(), 0) << run.err();
}

TEST(RunFailureTest, NothingStartedOutlivesHetrun) {
  TempDir dir;
  std::string orphans = dir.path() + "/orphans";
  // The workers succeed but leave grandchildren that ignore SIGTERM: SIGKILL at the deadline.
  HetrunProcess run(RunArgs(2, {"--grace-period", "1"}, {"orphan", orphans, "2", "exit", "0"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_LE(run.elapsed(), 10s);
  ASSERT_EQ(ReadLines(orphans).size(), 4u);
  for (const std::string& pid : ReadLines(orphans)) {
    EXPECT_FALSE(testing::ProcessAlive(std::stoi(pid))) << pid;
  }
}

}  // namespace
}  // namespace hetrun

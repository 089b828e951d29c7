// Re-plan by supervised restart (`hetrun run --replan-restart`, docs/how-to/replan-restart.md):
// every local worker's 82 with a complete checkpoint restarts the group on the recorded layout,
// bounded by --max-replans and not by --max-restarts; any other mix of codes, a worker still
// running after the grace period or no checkpoint published by the attempt is an ordinary failure;
// the checkpoint folder is checked before any worker starts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "run_harness.h"

namespace hetrun {
namespace {

using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::RunArgs;
using testing::TempDir;

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::vector<std::string> ReplanFlags(const std::string& checkpoint,
                                     std::vector<std::string> more = {}) {
  std::vector<std::string> flags{"--replan-restart", "--checkpoint-dir", checkpoint};
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

TEST(RunReplanTest, EveryWorkerExiting82RestartsTheGroupWithoutSpendingMaxRestarts) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  // Attempt 0: every rank exits 82 after rank 0 published a checkpoint (--max-restarts stays 0:
  // a re-plan is not a restart).
  HetrunProcess run(
      RunArgs(2, ReplanFlags(ckpt),
              {"env", "TORCHELASTIC_RESTART_COUNT", "HETRUN_CHECKPOINT_DIR", "c0:checkpoint", ckpt,
               "c0:sleep", "200", "c0:exit", "82", "out", "resumed"}),
      HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  const std::string out = run.out();
  EXPECT_EQ(Count(out, "TORCHELASTIC_RESTART_COUNT=0"), 2u) << out;
  EXPECT_EQ(Count(out, "TORCHELASTIC_RESTART_COUNT=1"), 2u) << out;
  EXPECT_EQ(Count(out, "HETRUN_CHECKPOINT_DIR=" + ckpt), 4u) << out;
  EXPECT_EQ(Count(out, "resumed"), 2u) << out;
  EXPECT_NE(run.err().find("re-plan by restart 1 of 3"), std::string::npos) << run.err();
}

TEST(RunReplanTest, OneWorker82AndAnother3IsAnOrdinaryFailureExit3) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  HetrunProcess run(RunArgs(2, ReplanFlags(ckpt),
                            {"out", "attempt", "r0:checkpoint", ckpt, "r0:exit", "82", "r1:sleep",
                             "300", "r1:exit", "3"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 3) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 2u) << run.out();  // no second attempt
  EXPECT_NE(testing::ReadFile(dir.path() + "/termination-log").find("rank 1"), std::string::npos);
}

TEST(RunReplanTest, AWorkerStillRunningAfterTheGracePeriodIsAnOrdinaryFailure) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  HetrunProcess run(
      RunArgs(2, ReplanFlags(ckpt, {"--grace-period", "1s"}),
              {"out", "attempt", "r0:checkpoint", ckpt, "r0:exit", "82", "sleep", "60000"}),
      HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 2u) << run.out();
  const std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("rank(s) 1 did not exit within the grace period (1s)"), std::string::npos)
      << log;
}

TEST(RunReplanTest, EveryWorker82WithoutAPublishedCheckpointIsNotRestarted) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  HetrunProcess run(RunArgs(2, ReplanFlags(ckpt), {"out", "attempt", "exit", "82"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 2u) << run.out();
  const std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("the checkpoint " + ckpt + " is not complete: no " + ckpt +
                     "/hetrun-latest (no checkpoint was published)"),
            std::string::npos)
      << log;
}

// A complete checkpoint from an earlier run (the old layout's .metadata, and a published one)
// that no worker of this run wrote: workers that exit 82 without saving are not restarted on it.
TEST(RunReplanTest, Every82WithOnlyAStaleCheckpointIsNotRestarted) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  dir.WriteFile("ckpt/.metadata", "two days old");
  dir.WriteFile("ckpt/ckpt-1/.metadata", "two days old");
  dir.WriteFile("ckpt/hetrun-latest", "ckpt-1\n");
  HetrunProcess run(RunArgs(2, ReplanFlags(ckpt), {"out", "attempt", "exit", "82"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 2u) << run.out();
  const std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("still names 'ckpt-1', as when the attempt started"), std::string::npos)
      << log;
}

TEST(RunReplanTest, ReplansAreBoundedByMaxReplans) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  HetrunProcess run(RunArgs(1, ReplanFlags(ckpt, {"--max-replans", "2", "--max-restarts", "5"}),
                            {"out", "attempt", "checkpoint", ckpt, "exit", "82"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 3u) << run.out();
  const std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("that would be re-plan 3, over --max-replans 2"), std::string::npos) << log;
}

TEST(RunReplanTest, AWorkerThatFinishedBeforeAnother82IsAnOrdinaryFailure) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(::mkdir(ckpt.c_str(), 0700), 0);
  HetrunProcess run(
      RunArgs(2, ReplanFlags(ckpt),
              {"out", "attempt", "r1:sleep", "500", "r1:checkpoint", ckpt, "r1:exit", "82"}),
      HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 1) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 2u) << run.out();
  const std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("rank 0 exited with code 0 before"), std::string::npos) << log;
}

TEST(RunReplanTest, ReplanRestartWithoutCheckpointDirIsAUsageError) {
  TempDir dir;
  HetrunProcess run(RunArgs(1, {"--replan-restart"}, {"out", "started"}), HetrunEnv(dir.path()),
                    dir.path());
  EXPECT_EQ(run.Wait(), 64) << run.err();
  EXPECT_NE(run.err().find("--replan-restart needs --checkpoint-dir"), std::string::npos)
      << run.err();
  EXPECT_EQ(run.out().find("started"), std::string::npos);
}

TEST(RunReplanTest, ACheckpointDirThatCannotBeWrittenExits78BeforeAnyWorker) {
  TempDir dir;
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  for (const std::string& bad : {file, file + "/ckpt", dir.path() + "/missing/ckpt"}) {
    HetrunProcess run(RunArgs(1, ReplanFlags(bad), {"out", "started"}), HetrunEnv(dir.path()),
                      dir.path());
    EXPECT_EQ(run.Wait(), 78) << bad << "\n" << run.err();
    EXPECT_NE(run.err().find("--checkpoint-dir " + bad), std::string::npos) << run.err();
    EXPECT_EQ(run.out().find("started"), std::string::npos);
  }
}

TEST(RunReplanTest, AcrossNodesTheCheckpointDirMustBeOnTheLayoutStateVolume) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  // Node 1 of 2: refused before the rendezvous (no store needs to be up).
  HetrunProcess run(RunArgs(1,
                            ReplanFlags(ckpt, {"--nnodes", "2", "--node-rank", "1", "--master-addr",
                                               "127.0.0.1", "--master-port", "1"}),
                            {"out", "started"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 78) << run.err();
  EXPECT_NE(run.err().find("with 2 nodes it must be on shared storage, the volume of "
                           "--layout-state (HETRUN_LAYOUT_STATE), which is not given"),
            std::string::npos)
      << run.err();
  EXPECT_EQ(run.out().find("started"), std::string::npos);
}

TEST(RunReplanTest, AcrossNodesACheckpointDirOnAnotherFilesystemExits78) {
  TempDir dir;
  struct stat here {};
  struct stat shm {};
  if (::stat(dir.path().c_str(), &here) != 0 || ::stat("/dev/shm", &shm) != 0 ||
      here.st_dev == shm.st_dev) {
    GTEST_SKIP() << "no second filesystem (/dev/shm) beside " << dir.path();
  }
  HetrunProcess run(
      RunArgs(1,
              ReplanFlags("/dev/shm", {"--nnodes", "2", "--node-rank", "1", "--master-addr",
                                       "127.0.0.1", "--master-port", "1", "--layout-state",
                                       dir.path() + "/layout-state.json"}),
              {"out", "started"}),
      HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 78) << run.err();
  EXPECT_NE(run.err().find("but it is on another filesystem"), std::string::npos) << run.err();
}

}  // namespace
}  // namespace hetrun

// A full run-folder filesystem (issue 28 item 10), on a tmpfs with few inodes in a private mount
// namespace (`unshare -m`, root): mkdir then fails with ENOSPC. Skipped, with the reason, where
// mount namespaces are not permitted.
#include <gtest/gtest.h>

#include <string>

#include "run_harness.h"
#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessResult;
using testing::TempDir;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `script` run by sh inside a new mount namespace where BASE is a tmpfs of `inodes` inodes.
ProcessResult InFullDisk(const TempDir& dir, int inodes, const std::string& script) {
  testing::ProcessOptions options;
  options.env = testing::HetrunEnv(dir.path());
  (*options.env)["BASE"] = dir.path() + "/base";
  (*options.env)["HETRUN"] = HETRUN_BINARY;
  (*options.env)["HETRUN_RUN_BASE"] = dir.path() + "/base/runs";
  options.timeout = std::chrono::seconds(120);
  std::string mount =
      "mkdir -p \"$BASE\" && mount -t tmpfs -o size=4m,nr_inodes=" + std::to_string(inodes) +
      " tmpfs \"$BASE\" && " + script;
  return testing::RunProcess({"unshare", "-m", "sh", "-c", mount}, options);
}

bool MountNamespacesWork() {
  ProcessResult probe = testing::RunProcess(
      {"unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt && umount /mnt"});
  return probe.exit_code == 0;
}

// The worker fills the run folder's filesystem and fails transiently (75): the restart cannot
// make its attempt folder. This turned the worker's 75 into hetrun's 70 and lost its reason.
TEST(RunDiskFullTest, AFullRunFolderDuringARestartKeepsTheWorkersTransientCodeAndReason) {
  if (!MountNamespacesWork()) GTEST_SKIP() << "mount namespaces (unshare -m, tmpfs) not permitted";
  TempDir dir;
  const std::string worker =
      "i=0; while [ $i -lt 2000 ] && mkdir \"$HETRUN_RUN_DIR/f$i\" 2>/dev/null; do i=$((i+1)); "
      "done; echo \"the worker lost its dataset server\" >&2; exit 75";
  ProcessResult r =
      InFullDisk(dir, 64,
                 "exec \"$HETRUN\" run --master-port 0 --nproc-per-node 1 --max-restarts 1 -- "
                 "sh -c '" +
                     worker + "'");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  const std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_TRUE(Contains(log, "exited with code 75")) << log;
  EXPECT_TRUE(Contains(log, "the worker lost its dataset server")) << log;
  EXPECT_TRUE(Contains(log, "No space left on device")) << log;
  EXPECT_TRUE(Contains(r.err, "not restarting")) << r.err;
}

// The run folders' base is full before hetrun starts: 70 before, now 78 naming the disk.
TEST(RunDiskFullTest, AFullRunFolderBaseAtStartIsExit78NamingTheDisk) {
  if (!MountNamespacesWork()) GTEST_SKIP() << "mount namespaces (unshare -m, tmpfs) not permitted";
  TempDir dir;
  ProcessResult r = InFullDisk(dir, 16,
                               "mkdir \"$HETRUN_RUN_BASE\" && i=0; while [ $i -lt 100 ] && "
                               "mkdir \"$BASE/f$i\" 2>/dev/null; do i=$((i+1)); done; "
                               "exec \"$HETRUN\" run --master-port 0 --nproc-per-node 1 -- true");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 78) << r.err;
  const std::string base = dir.path() + "/base/runs";
  EXPECT_TRUE(Contains(r.err, "run folder base " + base)) << r.err;
  EXPECT_TRUE(Contains(r.err, "the disk is full")) << r.err;
  EXPECT_TRUE(Contains(r.err, "HETRUN_RUN_BASE")) << r.err;
}

}  // namespace
}  // namespace hetrun

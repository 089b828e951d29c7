// `hetrun run` under faults (issue 15): output floods and stalled consoles, late orphans, signal
// storms, inherited signal dispositions and descriptors, clocks, worker exit codes that collide
// with hetrun's, CUDA OOM and NCCL timeouts, the run folder and a full disk. Real processes
// throughout; the hard limits are liveness bounds (a broken hetrun blocks forever), never speed
// assertions. Elapsed times are recorded as test properties for the issue's before/after table.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "run_harness.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::Launch;
using testing::ReadFile;
using testing::ReadLines;
using testing::RunArgs;
using testing::TempDir;
using testing::WaitUntil;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> Shell(const std::string& script) {
  return {"run", "--nproc-per-node", "1", "--", "/bin/sh", "-c", script};
}

void Record(const char* key, std::chrono::steady_clock::duration elapsed) {
  ::testing::Test::RecordProperty(
      key, std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
}

// Item 3: a worker printing as fast as it can, into a console nobody reads any more.
TEST(RunFaultsTest, FloodIntoAStoppedStdoutReaderStillHandlesSigtermWithinTheGracePeriod) {
  TempDir dir;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  Launch launch;
  launch.stdout_fd = pipe_fds[1];
  HetrunProcess run({"run", "--nproc-per-node", "2", "--grace-period", "2s", "--", "yes",
                     "a line of a worker that prints as fast as it can"},
                    HetrunEnv(dir.path()), dir.path(), "hetrun", launch);
  ::close(pipe_fds[1]);
  // Let the pipe fill (64 KiB) and the flood run; the reader never reads.
  std::this_thread::sleep_for(1500ms);
  auto sent = std::chrono::steady_clock::now();
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(60s), 143) << run.err();
  auto after = std::chrono::steady_clock::now() - sent;
  Record("sigterm_to_exit_ms", after);
  // The grace period (2 s) plus a generous margin for a loaded machine: before the fix hetrun
  // blocked in write(2) and never exited.
  EXPECT_LT(after, 10s) << "SIGTERM must be handled within the grace period";
  EXPECT_NE(run.err().find("dropped: hetrun's stdout was not read fast enough"), std::string::npos)
      << run.err();
  ::close(pipe_fds[0]);
}

// Item 3: the same flood into a console that keeps up (a file): reads are bounded per turn.
TEST(RunFaultsTest, FloodIntoAFileStillHandlesSigtermWithinTheGracePeriod) {
  TempDir dir;
  HetrunProcess run({"run", "--nproc-per-node", "2", "--grace-period", "2s", "--", "yes",
                     "a line of a worker that prints as fast as it can"},
                    HetrunEnv(dir.path()), dir.path());
  std::this_thread::sleep_for(1500ms);
  auto sent = std::chrono::steady_clock::now();
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(60s), 143) << run.err();
  auto after = std::chrono::steady_clock::now() - sent;
  Record("sigterm_to_exit_ms", after);
  EXPECT_LT(after, 10s) << "SIGTERM must be handled within the grace period (2 s) + a margin";
  std::error_code ignored;
  std::filesystem::remove(dir.path() + "/hetrun.out", ignored);  // can be large
}

// Item 10: a grandchild re-parented to hetrun only after the SIGTERM sweep killed its parent
// still gets SIGTERM (and may exit cleanly), not a SIGKILL at the grace deadline.
TEST(RunFaultsTest, GrandchildOrphanedDuringTheSweepGetsSigtermToo) {
  TempDir dir;
  std::string file = dir.path() + "/grandchild";
  HetrunProcess run(RunArgs(1, {"--grace-period", "20s"}, {"grandorphan", file}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(60s), 0) << run.err();
  Record("exit_ms", run.elapsed());
  EXPECT_EQ(ReadLines(file), (std::vector<std::string>{"ready", "15"}))
      << "the grandchild must get SIGTERM from a repeated sweep\n"
      << run.err();
}

std::vector<std::string> TrapSteps(const std::string& dir, int n, int checkpoint_ms) {
  std::vector<std::string> steps;
  for (int rank = 0; rank < n; ++rank) {
    steps.insert(steps.end(),
                 {"r" + std::to_string(rank) + ":trap", dir + "/trap" + std::to_string(rank),
                  std::to_string(checkpoint_ms), "0"});
  }
  return steps;
}

bool AllReady(const std::string& dir, int n) {
  return WaitUntil([&] {
    for (int rank = 0; rank < n; ++rank) {
      auto lines = ReadLines(dir + "/trap" + std::to_string(rank));
      if (lines.empty() || lines[0] != "ready") return false;
    }
    return true;
  });
}

// Item 11: the first shutdown signal handled decides the exit code; later ones, with gaps
// between them, never change it.
TEST(RunFaultsTest, LaterSignalsWithGapsNeverChangeTheExitCode) {
  TempDir dir;
  HetrunProcess run(RunArgs(2, {}, TrapSteps(dir.path(), 2, 1500)), HetrunEnv(dir.path()),
                    dir.path());
  ASSERT_TRUE(AllReady(dir.path(), 2)) << run.err();
  for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGINT}) {
    run.Signal(signal);
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(run.Wait(), 143) << run.err();
  EXPECT_NE(ReadFile(dir.path() + "/termination-log").find("SIGTERM"), std::string::npos);
}

// Item 11: signals that arrive while hetrun finishes (after the workers exited, while it writes
// the termination log) cannot kill it and replace its exit code. The termination log is a FIFO
// here, so hetrun waits in open() until the test reads it: the window is as wide as we like.
TEST(RunFaultsTest, SignalsArrivingWhileHetrunExitsDoNotReplaceItsExitCode) {
  TempDir dir;
  auto env = HetrunEnv(dir.path());
  std::string log = dir.path() + "/termination-fifo";
  ASSERT_EQ(::mkfifo(log.c_str(), 0600), 0);
  env["HETRUN_TERMINATION_LOG"] = log;
  HetrunProcess run(RunArgs(1, {}, TrapSteps(dir.path(), 1, 0)), env, dir.path());
  ASSERT_TRUE(AllReady(dir.path(), 1)) << run.err();
  run.Signal(SIGTERM);
  ASSERT_TRUE(WaitUntil([&] { return run.err().find("exiting with 143") != std::string::npos; }))
      << run.err();
  std::this_thread::sleep_for(100ms);  // hetrun is in open() of the FIFO now
  run.Signal(SIGHUP);
  run.Signal(SIGUSR1);
  run.Signal(SIGINT);
  std::this_thread::sleep_for(200ms);
  int reader = ::open(log.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(run.Wait(), 143) << run.err();
  char text[512] = {};
  EXPECT_GT(::read(reader, text, sizeof text - 1), 0);
  EXPECT_NE(std::string(text).find("SIGTERM"), std::string::npos) << text;
  ::close(reader);
}

// Item 12: a SIGINT ignored and descriptors open when hetrun started reach no worker; the
// descriptor named in PMI_FD is kept; hetrun itself still stops on the SIGINT.
TEST(RunFaultsTest, WorkersGetDefaultSignalsAndOnlyTheDescriptorsHandedDownOnPurpose) {
  TempDir dir;
  std::string file = dir.WriteFile("inherited", "x");
  Launch launch;
  launch.ignored = {SIGINT, SIGQUIT, SIGUSR2};
  launch.fds = {{7, file}, {9, file}, {12, file}};
  auto env = HetrunEnv(dir.path());
  env["PMI_FD"] = "9";
  HetrunProcess run(RunArgs(1, {}, {"fds", "signals", "trap", dir.path() + "/trap0", "0", "0"}),
                    env, dir.path(), "hetrun", launch);
  ASSERT_TRUE(AllReady(dir.path(), 1)) << run.err();
  run.Signal(SIGINT);
  EXPECT_EQ(run.Wait(), 130) << "hetrun must stop on a SIGINT it inherited as ignored\n"
                             << run.err();
  std::string out = run.out();
  EXPECT_NE(out.find("fds 0 1 2 9\n"), std::string::npos) << out;
  EXPECT_NE(out.find("ignored\n"), std::string::npos) << out;
  EXPECT_NE(out.find("blocked\n"), std::string::npos) << out;
}

// Item 13: hang detection compares a heartbeat file's times only with themselves: a file time
// in the future (a skewed clock) does not hide a hang.
TEST(RunFaultsTest, HeartbeatTimeInTheFutureDoesNotHideAHang) {
  TempDir dir;
  HetrunProcess run({"run", "--nproc-per-node", "1", "--hang-timeout", "2s", "--", "/bin/sh", "-c",
                     "touch -d 2099-01-01 \"$HETRUN_HEARTBEAT\" && exec sleep 600"},
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(60s), 75) << run.err();
  Record("exit_ms", run.elapsed());
  EXPECT_NE(ReadFile(dir.path() + "/termination-log").find("sent no heartbeat"), std::string::npos);
}

TEST(RunFaultsTest, HangTimeoutThatRoundsToZeroIsAnError) {
  TempDir dir;
  HetrunProcess flag(RunArgs(1, {"--hang-timeout", "0.0001"}, {"exit", "0"}), HetrunEnv(dir.path()),
                     dir.path(), "flag");
  EXPECT_EQ(flag.Wait(), 64) << flag.err();
  EXPECT_NE(flag.err().find("--hang-timeout '0.0001': is 0 ms"), std::string::npos) << flag.err();
  auto env = HetrunEnv(dir.path());
  env["HETRUN_HANG_TIMEOUT"] = "0";
  HetrunProcess variable(RunArgs(1, {}, {"exit", "0"}), env, dir.path(), "variable");
  EXPECT_EQ(variable.Wait(), 78) << variable.err();
  EXPECT_NE(variable.err().find("HETRUN_HANG_TIMEOUT='0' (environment): is 0 ms"),
            std::string::npos)
      << variable.err();
}

// Item 7: TORCHELASTIC_ERROR_FILE, read after the worker died; CUDA OOM is 81, never restarted.
TEST(RunFaultsTest, CudaOomInTheErrorFileExits81WithTheMessageAndLastFrames) {
  TempDir dir;
  std::string report = dir.WriteFile(
      "error.json",
      R"({"message": {"message": "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB",)"
      R"( "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\",)"
      R"( line 30, in <module>\n    main()\n  File \"train.py\", line 21, in main\n    step(x)\n)"
      R"(  File \"train.py\", line 12, in step\n    y = torch.empty(n, device=\"cuda\")\n)"
      R"(torch.OutOfMemoryError: CUDA out of memory.\n", "timestamp": "1764500000"}}})");
  HetrunProcess run(Shell("echo attempt; cp " + report + " \"$TORCHELASTIC_ERROR_FILE\" && exit 1"),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 81) << run.err();
  std::string log = ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("ran out of GPU memory"), std::string::npos) << log;
  EXPECT_NE(log.find("Tried to allocate 20.00 GiB"), std::string::npos) << log;
  EXPECT_NE(log.find(R"(File "train.py", line 12, in step: y = torch.empty(n, device="cuda"))"),
            std::string::npos)
      << log;
  EXPECT_NE(run.err().find("Tried to allocate 20.00 GiB"), std::string::npos) << run.err();
}

TEST(RunFaultsTest, CudaOomOnStderrExits81AndIsNotRestarted) {
  TempDir dir;
  auto args = Shell("echo attempt; echo 'RuntimeError: CUDA error: out of memory' >&2; exit 1");
  args.insert(args.begin() + 1, {"--max-restarts", "2"});
  HetrunProcess run(args, HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 81) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 1u) << run.out();
}

TEST(RunFaultsTest, NcclWatchdogTimeoutExits75AndIsRestarted) {
  TempDir dir;
  auto args = Shell(
      "echo attempt; echo '[Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.' >&2; "
      "kill -ABRT $$");
  args.insert(args.begin() + 1, {"--max-restarts", "2"});
  HetrunProcess run(args, HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 75) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 3u) << run.out();
  EXPECT_NE(ReadFile(dir.path() + "/termination-log").find("NCCL watchdog timeout"),
            std::string::npos);
}

TEST(RunFaultsTest, AbortRepeatedTheSameWayStopsSpendingTheRestartBudget) {
  TempDir dir;
  HetrunProcess run(RunArgs(1, {"--max-restarts", "5"},
                            {"out", "attempt", "err", "assertion `ok' failed", "kill", "6"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 134) << run.err();
  EXPECT_EQ(Count(run.out(), "attempt"), 2u) << run.out();
  EXPECT_NE(ReadFile(dir.path() + "/termination-log").find("SIGABRT the same way"),
            std::string::npos);
}

// Item 14: one run folder per `hetrun run`, named for the workers, removed at exit; the error
// file lives there.
TEST(RunFaultsTest, WorkersShareOneRunFolderThatIsRemovedAtExit) {
  TempDir dir;
  auto env = HetrunEnv(dir.path());
  env["HETRUN_RUN_BASE"] = dir.path() + "/runs";
  HetrunProcess run(RunArgs(2, {}, {"env", "HETRUN_RUN_DIR", "TORCHELASTIC_ERROR_FILE"}), env,
                    dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  std::string out = run.out();
  size_t at = out.find("HETRUN_RUN_DIR=" + dir.path() + "/runs/run-");
  ASSERT_NE(at, std::string::npos) << out;
  std::string run_dir = out.substr(at + 15, out.find('\n', at) - at - 15);
  EXPECT_NE(out.find("TORCHELASTIC_ERROR_FILE=" + run_dir + "/attempt_0/rank_1/error.json"),
            std::string::npos)
      << out;
  EXPECT_EQ(Count(out, "HETRUN_RUN_DIR=" + run_dir + "\n"), 2u) << out;
  EXPECT_FALSE(std::filesystem::exists(run_dir)) << "removed at exit";
}

TEST(RunFaultsTest, RunFolderOfAKilledHetrunIsRemovedByTheNextOne) {
  TempDir dir;
  auto env = HetrunEnv(dir.path());
  env["HETRUN_RUN_BASE"] = dir.path() + "/runs";
  std::string stale;
  {
    HetrunProcess killed(RunArgs(1, {}, {"env", "HETRUN_RUN_DIR", "sleep", "60000"}), env,
                         dir.path(), "killed");
    ASSERT_TRUE(WaitUntil([&] {
      return killed.out().find("HETRUN_RUN_DIR=") != std::string::npos;
    })) << killed.err();
    std::string out = killed.out();
    stale = out.substr(15, out.find('\n') - 15);
    ::kill(killed.pid(), SIGKILL);
    EXPECT_EQ(killed.Wait(), 137);
  }
  ASSERT_TRUE(std::filesystem::exists(stale)) << stale;
  HetrunProcess next(RunArgs(1, {}, {"exit", "0"}), env, dir.path(), "next");
  EXPECT_EQ(next.Wait(), 0) << next.err();
  EXPECT_FALSE(std::filesystem::exists(stale)) << "stale run folder " << stale << " kept";
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/runs"));
}

// Item 14: log lines a full disk refused leave a trace.
TEST(RunFaultsTest, LogLinesRefusedByAFullDiskAreCountedAndLogged) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/logs");
  std::filesystem::create_symlink("/dev/full", dir.path() + "/logs/rank_0.log");
  HetrunProcess run(
      RunArgs(1, {"--log-dir", dir.path() + "/logs"}, {"out", "one", "out", "two", "err", "three"}),
      HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_NE(run.err().find("3 line(s) of rank 0 could not be written to " + dir.path() +
                           "/logs/rank_0.log: No space left on device"),
            std::string::npos)
      << run.err();
}

}  // namespace
}  // namespace hetrun

#include "supervise/report/failure_report.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace hetrun::launcher {
namespace {

WorkerFailure Killed(int signal) {
  WorkerFailure f;
  f.kind = WorkerFailure::Kind::kSignaled;
  f.rank = 3;
  f.local_rank = 1;
  f.signal = signal;
  f.exit_code = 128 + signal;
  return f;
}

TEST(FailureReportTest, NamesTheRankAndTheSignal) {
  EXPECT_EQ(FailureSummary(Killed(SIGKILL)),
            "rank 3 (local rank 1) was killed by SIGKILL (exit code 137)");
}

TEST(FailureReportTest, HangNamesTheSecondsSinceTheLastBeat) {
  WorkerFailure f;
  f.kind = WorkerFailure::Kind::kHang;
  f.rank = 5;
  f.local_rank = 5;
  f.exit_code = 75;
  f.silence = std::chrono::milliseconds(62'400);
  f.hang_timeout = std::chrono::seconds(60);
  EXPECT_NE(FailureSummary(f).find("rank 5 (local rank 5) sent no heartbeat for 62 s"),
            std::string::npos)
      << FailureSummary(f);
}

TEST(FailureReportTest, DeadlineNamesItAndIsNotRestartable) {
  WorkerFailure f;
  f.kind = WorkerFailure::Kind::kDeadline;
  f.exit_code = 75;
  f.hang_timeout = std::chrono::seconds(20);
  EXPECT_NE(FailureSummary(f).find("did not finish within 20s; exit code 75"), std::string::npos)
      << FailureSummary(f);
  EXPECT_FALSE(IsRestartable(f));
}

TEST(FailureReportTest, TerminationReasonKeepsTheNewestStderrLinesWithin4096Bytes) {
  WorkerFailure f = Killed(SIGSEGV);
  for (int i = 0; i < 20; ++i) f.stderr_tail.push_back(std::string(400, 'a' + i % 26));
  std::string reason = TerminationReason(f);
  EXPECT_LE(reason.size(), 4096u);
  EXPECT_EQ(reason.rfind("hetrun: rank 3", 0), 0u);
  EXPECT_NE(reason.find("SIGSEGV"), std::string::npos);
  EXPECT_NE(reason.find(f.stderr_tail.back()), std::string::npos) << "newest line kept";
  EXPECT_EQ(reason.find(f.stderr_tail.front()), std::string::npos) << "oldest line dropped";
}

TEST(FailureReportTest, RestartsOnlyWhatARetryCanFix) {
  EXPECT_TRUE(IsRestartable(Killed(SIGKILL)));
  WorkerFailure exited;
  exited.kind = WorkerFailure::Kind::kExited;
  for (int code : {1, 2, 64, 78, 80, 81, 126, 127, 137}) {
    exited.exit_code = code;
    EXPECT_FALSE(IsRestartable(exited)) << code;
  }
  exited.exit_code = 75;
  EXPECT_TRUE(IsRestartable(exited));
  WorkerFailure received;
  received.kind = WorkerFailure::Kind::kReceivedSignal;
  EXPECT_FALSE(IsRestartable(received));
}

WorkerFailure Exited(int code) {
  WorkerFailure f;
  f.rank = 2;
  f.local_rank = 0;
  f.exit_code = code;
  return f;
}

TEST(FailureReportTest, WorkerCodesThatAreHetrunsOwnAreReportedAs1) {
  for (int code : {64, 70, 78, 80, 81, 83, 84}) {
    WorkerFailure f = Exited(code);
    ClassifyWorkerFailure(f);
    EXPECT_EQ(f.exit_code, 1) << code;
    EXPECT_EQ(f.worker_code, code);
    EXPECT_FALSE(IsRestartable(f)) << code;
    EXPECT_NE(FailureSummary(f).find("exited with code " + std::to_string(code) +
                                     ", a code hetrun reserves"),
              std::string::npos);
  }
  for (int code : {1, 2, 65, 75, 79, 85, 125}) {
    WorkerFailure f = Exited(code);
    ClassifyWorkerFailure(f);
    EXPECT_EQ(f.exit_code, code) << code;
    EXPECT_EQ(f.cause, WorkerFailure::Cause::kNone) << code;
  }
}

TEST(FailureReportTest, AWorkersReplanRequestIsReportedAs1WithTheReason) {
  WorkerFailure f = Exited(82);
  ClassifyWorkerFailure(f);
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_EQ(f.worker_code, 82);
  EXPECT_EQ(f.cause, WorkerFailure::Cause::kReplanRequested);
  EXPECT_FALSE(IsRestartable(f));
  EXPECT_NE(FailureSummary(f).find("exited with code 82 (re-plan requested), which this hetrun "
                                   "run does not act on"),
            std::string::npos)
      << FailureSummary(f);
}

TEST(FailureReportTest, CudaOomFromTheErrorFileOrStderrIs81AndNotRestartable) {
  WorkerFailure from_file = Exited(1);
  from_file.error_message = "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
  ClassifyWorkerFailure(from_file);
  EXPECT_EQ(from_file.exit_code, 81);
  EXPECT_FALSE(IsRestartable(from_file));
  WorkerFailure from_stderr = Killed(SIGABRT);
  from_stderr.stderr_tail = {"terminate called after throwing", "CUDA error: out of memory"};
  ClassifyWorkerFailure(from_stderr);
  EXPECT_EQ(from_stderr.exit_code, 81);
  EXPECT_FALSE(IsRestartable(from_stderr)) << "a SIGABRT from OOM is not worth a restart";
  EXPECT_NE(FailureSummary(from_stderr).find("ran out of GPU memory"), std::string::npos);
}

TEST(FailureReportTest, NcclWatchdogTimeoutIs75AndRestartable) {
  WorkerFailure f = Killed(SIGABRT);
  f.stderr_tail = {"[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)"};
  ClassifyWorkerFailure(f);
  EXPECT_EQ(f.exit_code, 75);
  EXPECT_TRUE(IsRestartable(f));
  EXPECT_TRUE(AbortSignature(Killed(SIGKILL)).empty());
  EXPECT_FALSE(AbortSignature(f).empty());
}

TEST(FailureReportTest, TerminationReasonShowsTheErrorFilesLastFrames) {
  WorkerFailure f = Exited(3);
  f.error_message = "ValueError: bad batch";
  f.error_frames = {"File \"t.py\", line 9, in step: check(x)"};
  std::string reason = TerminationReason(f);
  EXPECT_NE(reason.find("exited with code 3: ValueError: bad batch"), std::string::npos) << reason;
  EXPECT_NE(reason.find("  File \"t.py\", line 9, in step: check(x)\n"), std::string::npos)
      << reason;
}

// Issue 39 item 13: a communication failure raised in Python ends in exit 1, which was never
// restarted; it is a peer's symptom: 75 and restartable. Other tracebacks stay permanent.
TEST(FailureReportTest, ACommunicationFailureRaisedInPythonIs75AndRestartable) {
  for (const char* words :
       {"RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[10.0.0.2]:4123",
        "torch.distributed.DistNetworkError: failed to recv, got 0 bytes",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled system error",
        "NCCL error: remote process exited or there was a network error"}) {
    WorkerFailure f = Exited(1);
    f.kind = WorkerFailure::Kind::kExited;
    f.stderr_tail = {"Traceback (most recent call last):", words};
    ClassifyWorkerFailure(f);
    EXPECT_EQ(f.cause, WorkerFailure::Cause::kCommFailure) << words;
    EXPECT_EQ(f.exit_code, 75) << words;
    EXPECT_EQ(f.worker_code, 1);
    EXPECT_TRUE(IsRestartable(f)) << words;
    EXPECT_TRUE(FailureSignature(f).empty()) << "a peer's symptom never counts as repeated";
    EXPECT_NE(FailureSummary(f).find("lost a peer"), std::string::npos) << FailureSummary(f);
  }
  WorkerFailure usage = Exited(1);
  usage.error_message = "torch.distributed.DistBackendError: NCCL error: invalid usage";
  ClassifyWorkerFailure(usage);
  EXPECT_EQ(usage.exit_code, 1) << "a program's misuse of NCCL is no lost peer";
  WorkerFailure plain = Exited(1);
  plain.error_message = "ValueError: bad batch";
  ClassifyWorkerFailure(plain);
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_FALSE(IsRestartable(plain));
  EXPECT_TRUE(IsRestartable(plain, RestartOn::kAny)) << "torchrun's rule";
  EXPECT_EQ(FailureSignature(plain), "rank 2 code 1: ValueError: bad batch");
}

TEST(FailureReportTest, RestartOnAnyRestartsEveryWorkerFailureButNotHetrunsOwn) {
  WorkerFailure oom = Exited(1);
  oom.error_message = "CUDA out of memory";
  ClassifyWorkerFailure(oom);
  EXPECT_TRUE(IsRestartable(oom, RestartOn::kAny));
  WorkerFailure spawn;
  spawn.kind = WorkerFailure::Kind::kSpawn;
  spawn.exit_code = 127;
  EXPECT_FALSE(IsRestartable(spawn, RestartOn::kAny));
  WorkerFailure received;
  received.kind = WorkerFailure::Kind::kReceivedSignal;
  EXPECT_FALSE(IsRestartable(received, RestartOn::kAny));
  WorkerFailure repeated = Exited(1);
  repeated.cause = WorkerFailure::Cause::kRepeatedFailure;
  EXPECT_FALSE(IsRestartable(repeated, RestartOn::kAny));
  EXPECT_TRUE(ParseRestartOn("any").ok());
  EXPECT_FALSE(ParseRestartOn("always").ok());
}

// Issue 39 item 14: a worker that never beat is reported against the start-up timeout.
TEST(FailureReportTest, AHangBeforeTheFirstBeatNamesTheStartupTimeout) {
  WorkerFailure f;
  f.kind = WorkerFailure::Kind::kHang;
  f.rank = 1;
  f.local_rank = 1;
  f.exit_code = 75;
  f.before_first_beat = true;
  f.hang_timeout = std::chrono::minutes(10);
  EXPECT_NE(FailureSummary(f).find("no first heartbeat within 10m"), std::string::npos)
      << FailureSummary(f);
}

}  // namespace
}  // namespace hetrun::launcher

#include "supervise/failure_report.h"

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

}  // namespace
}  // namespace hetrun::launcher

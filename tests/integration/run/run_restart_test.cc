// Hang detection (--hang-timeout) and the restart policy (--max-restarts) of `hetrun run`.
#include <gtest/gtest.h>

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

TEST(RunRestartTest, WorkerThatStopsBeatingIsAHangExit75) {
  TempDir dir;
  HetrunProcess run(RunArgs(2, {"--hang-timeout", "1s", "--grace-period", "2s"},
                            {"r0:beat", "400", "50", "r1:beat", "3", "50", "sleep", "60000"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 75) << run.err();
  std::string log = testing::ReadFile(dir.path() + "/termination-log");
  EXPECT_NE(log.find("rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("no heartbeat for 1 s"), std::string::npos) << log;
}

TEST(RunRestartTest, BeatingWorkersAreNotHung) {
  TempDir dir;
  // The workers run 2.5 times the timeout; the timeout leaves start-up (sanitizers, a loaded
  // machine) a generous 2 s before the first beat.
  HetrunProcess run(RunArgs(2, {"--hang-timeout", "2s"}, {"beat", "50", "100"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
}

TEST(RunRestartTest, RestartsAreCountedAndBounded) {
  TempDir dir;
  HetrunProcess run(
      RunArgs(2, {"--prefix-ranks", "--max-restarts", "2"},
              // rank 1 dies only after rank 0 had time to print (a SIGTERM could beat it)
              {"env", "TORCHELASTIC_RESTART_COUNT", "r1:sleep", "500", "r1:kill", "9", "sleep",
               "60000"}),
      HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 137) << run.err();
  std::string out = run.out();
  for (int count = 0; count <= 2; ++count) {
    EXPECT_EQ(Count(out, "TORCHELASTIC_RESTART_COUNT=" + std::to_string(count)), 2u) << out;
  }
  EXPECT_EQ(Count(out, "TORCHELASTIC_RESTART_COUNT=3"), 0u) << out;
  EXPECT_NE(testing::ReadFile(dir.path() + "/termination-log").find("after 2 restart(s)"),
            std::string::npos);
}

TEST(RunRestartTest, TransientFailureIsRestartedAndCanSucceed) {
  TempDir dir;
  HetrunProcess run(RunArgs(1, {"--max-restarts", "3"}, {"c0:exit", "75", "out", "second try"}),
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(Count(run.out(), "second try"), 1u);
}

TEST(RunRestartTest, DeterministicFailuresAreNeverRestarted) {
  for (const char* code : {"78", "80", "81", "126", "127", "1"}) {
    TempDir dir;
    HetrunProcess run(RunArgs(1, {"--max-restarts", "3"}, {"out", "attempt", "exit", code}),
                      HetrunEnv(dir.path()), dir.path());
    const int expected =
        std::string(code) == "78" || std::string(code) == "80" || std::string(code) == "81"
            ? 1  // a worker's use of hetrun's own codes is reported as 1
            : std::stoi(code);
    EXPECT_EQ(run.Wait(), expected) << run.err();
    EXPECT_EQ(Count(run.out(), "attempt"), 1u) << "exit " << code;
  }
}

}  // namespace
}  // namespace hetrun

// A shortened `make demo`: examples/trainer under the real `hetrun run` on an emulated mixed node
// (2 x H100 + 1 x A100, the A100's compute stretched 3.17x by HETRUN_EMULATE_SLOWDOWN). The tuner
// must move samples away from the slow rank, and the loss must fall.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "free_port.h"
#include "run_process.h"
#include "summary_file.h"

namespace hetrun {
namespace {

using testing::FreePort;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::ReadSummary;
using testing::RunProcess;
using testing::TempDir;

/// key=value lines of the trainer's --summary file.
std::vector<int64_t> ParseShares(const std::string& text) {
  std::vector<int64_t> shares;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) shares.push_back(std::stoll(item));
  return shares;
}

ProcessResult RunDemo(const TempDir& dir, const std::vector<std::string>& trainer_flags) {
  std::vector<std::string> argv = {
      HETRUN_BINARY,
      "run",
      "--nproc-per-node",
      "3",
      "--master-port",
      std::to_string(FreePort()),
      "--fake-gpus",
      "H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,A100-SXM4-80GB:8.0:81049",
      "--",
      HETRUN_TRAINER};
  argv.insert(argv.end(), trainer_flags.begin(), trainer_flags.end());
  ProcessOptions options;
  options.env = std::map<std::string, std::string>{
      {"PATH", std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"},
      {"HOME", dir.path()},
      {"OMP_NUM_THREADS", "1"},
      {"HETRUN_EMULATE_SLOWDOWN", "ampere=3.17,hopper=1.0"}};
  options.timeout = std::chrono::seconds(150);
  return RunProcess(argv, options);
}

TEST(TrainerDemoTest, TunerMovesSamplesAwayFromTheSlowRankAndLossFalls) {
  TempDir dir;
  std::string summary = dir.path() + "/summary";
  ProcessResult r = RunDemo(dir, {"--batch", "24", "--steps", "26", "--window", "4", "--warmup",
                                  "2", "--seq", "64", "--summary", summary});
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::map<std::string, std::string> s = ReadSummary(summary);
  ASSERT_EQ(s.count("shares_final"), 1u) << r.out;
  std::vector<int64_t> shares = ParseShares(s["shares_final"]);
  ASSERT_EQ(shares.size(), 3u) << s["shares_final"];
  EXPECT_EQ(shares[0] + shares[1] + shares[2], 24);
  // Rank 2 is the A100 (slowdown 3.17): strictly fewer samples than each H100 after tuning.
  EXPECT_LT(shares[2], shares[0]) << r.out;
  EXPECT_LT(shares[2], shares[1]) << r.out;
  EXPECT_GE(shares[2], 1) << "--min-share 1 (the default) keeps every rank computing\n" << r.out;
  EXPECT_LT(std::stod(s["loss_last"]), std::stod(s["loss_first"])) << r.out;
  // Efficiency against the ideal split is reported every window and summarised: a ratio of the
  // fitted optimum to the slowest rank's measured compute, so positive and (fits being local
  // lines through the measured times) not far above 1. Its size is a timing: not asserted.
  ASSERT_EQ(s.count("efficiency"), 1u) << r.out;
  EXPECT_GT(std::stod(s["efficiency"]), 0) << r.out;
  EXPECT_LT(std::stod(s["efficiency"]), 1.5) << r.out;
  EXPECT_GT(std::stod(s["ideal_samples_per_s"]), 0) << r.out;
  EXPECT_NE(r.out.find("efficiency"), std::string::npos) << r.out;
  // The figure the issue asks for; reported, not asserted (timings on a shared machine).
  std::printf("tuner overhead: %.4f%% of the step time; shares %s\n",
              100 * std::stod(s["tuner_overhead"]), s["shares_final"].c_str());
}

TEST(TrainerDemoTest, UniformSharesStayPutWithNoTune) {
  TempDir dir;
  std::string summary = dir.path() + "/summary";
  ProcessResult r = RunDemo(dir, {"--batch", "24", "--steps", "10", "--window", "4", "--warmup",
                                  "2", "--seq", "32", "--no-tune", "--summary", summary});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::map<std::string, std::string> s = ReadSummary(summary);
  EXPECT_EQ(s["shares_final"], "8,8,8") << r.out;
  // The untuned run fits too (it just does not act): its efficiency is measured the same way.
  EXPECT_GT(std::stod(s["efficiency"]), 0) << r.out;
  EXPECT_NE(r.out.find("uniform shares"), std::string::npos) << r.out;
}

TEST(TrainerDemoTest, BadFlagIsAUsageError) {
  TempDir dir;
  ProcessResult r = RunDemo(dir, {"--window", "zero"});
  // The trainer exits 64; hetrun reports a worker's use of its own codes as 1 (issue 15).
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("--window"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with code 64, a code hetrun reserves"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrun

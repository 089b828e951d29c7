// Multi-process tests of the runtime: real worker processes (runtime_worker.cc) on 127.0.0.1,
// joined through a TCPStore on a free port, Gloo collectives.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "run_process.h"
#include "world_workers.h"

namespace hetrun {
namespace {

using testing::ProcessResult;

std::vector<ProcessResult> RunWorkers(int world, const std::string& mode,
                                      const std::string& bucket_bytes = "") {
  std::vector<std::string> argv{HETRUN_RUNTIME_WORKER, mode};
  if (!bucket_bytes.empty()) argv.push_back(bucket_bytes);
  std::vector<ProcessResult> results =
      testing::RunWorldWorkers(world, argv, std::chrono::seconds(90));
  // Keep the workers' result lines; drop the runtime's log lines ("[date] [info] ...").
  for (ProcessResult& result : results) {
    std::istringstream lines(result.out);
    std::string line, kept;
    while (std::getline(lines, line)) {
      if (!line.empty() && line[0] != '[') kept += line + "\n";
    }
    result.out = kept;
  }
  return results;
}

// The bucket sizes the exactness holds for: one parameter per bucket, the default (25 MiB), and
// one bucket for everything.
class BucketSizeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BucketSizeTest, UnequalSharesGiveTheSingleProcessGradient) {
  std::vector<ProcessResult> results = RunWorkers(4, "gradients", GetParam());
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].err;
    double mlp = 1, block = 1;
    ASSERT_EQ(
        std::sscanf(results[r].out.c_str(), "max_abs_diff mlp=%lf transformer=%lf", &mlp, &block),
        2)
        << results[r].out;
    std::printf("rank %zu: %s", r, results[r].out.c_str());
    EXPECT_LE(mlp, 1e-6);
    EXPECT_LE(block, 1e-6);
  }
}

// Micro-batches communicate only on the last one; a rank with no samples and a parameter no rank
// uses still get the one-process gradient (zeros for the unused one).
TEST_P(BucketSizeTest, AccumulatedMicroBatchesAndUnusedParametersStayExact) {
  std::vector<ProcessResult> results = RunWorkers(4, "accumulate", GetParam());
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].err;
    double diff = 1;
    long long early = -1, hook = -1, buckets = -1;
    ASSERT_EQ(std::sscanf(results[r].out.c_str(),
                          "max_abs_diff %lf early_starts %lld hook_starts %lld buckets %lld", &diff,
                          &early, &hook, &buckets),
              4)
        << results[r].out;
    std::printf("rank %zu: %s", r, results[r].out.c_str());
    EXPECT_LE(diff, 1e-6);
    EXPECT_EQ(early, 0) << "a bucket started before the last micro-batch";
    if (std::string(GetParam()) == "1") {
      // Buckets in reverse parameter order: the two of the last layer start from the hooks, the
      // unused parameter's bucket and those after it in Finish() (rank 0 runs no backward).
      EXPECT_EQ(buckets, 5);
      EXPECT_EQ(hook, r == 0 ? 0 : 2);
    } else {
      EXPECT_EQ(buckets, 1);
      EXPECT_EQ(hook, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Buckets, BucketSizeTest,
                         ::testing::Values("1", "26214400", "1099511627776"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.index == 0   ? "OneParameterEach"
                                              : info.index == 1 ? "Default25MiB"
                                                                : "OneBucket");
                         });

TEST(RuntimeTest, EveryRankGathersTheSameBytesAndComputesTheSameSplit) {
  std::vector<ProcessResult> results = RunWorkers(3, "gather");
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].err;
    EXPECT_EQ(results[r].out, results[0].out) << "rank " << r << " differs from rank 0";
  }
  // 3 windows; the slowest rank (r = 2, 3 ms/sample) ends with the smallest share.
  std::istringstream lines(results[0].out);
  std::string line, last;
  int count = 0;
  while (std::getline(lines, line)) {
    last = line;
    ++count;
  }
  EXPECT_EQ(count, 3) << results[0].out;
  long long a = 0, b = 0, c = 0;
  ASSERT_EQ(
      std::sscanf(last.substr(last.find("shares=")).c_str(), "shares=%lld,%lld,%lld", &a, &b, &c),
      3);
  EXPECT_EQ(a + b + c, 30);
  EXPECT_GT(a, c);
}

}  // namespace
}  // namespace hetrun

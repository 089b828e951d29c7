// The baselines as their sources define them: proportional per window, LBB per iteration.
#include "hetrun/tuner/stage_policy.h"

#include <gtest/gtest.h>

#include <numeric>

namespace hetrun::tuner {
namespace {

int64_t Sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(ProportionalSplitTest, SplitsByWeightWithLargestRemainder) {
  std::vector<double> w = {1, 1, 1};
  std::vector<int64_t> caps = {10, 10, 10};
  EXPECT_EQ(ProportionalSplit(10, w, caps), (std::vector<int64_t>{4, 3, 3}));
  std::vector<double> w2 = {3, 1};
  std::vector<int64_t> caps2 = {100, 100};
  EXPECT_EQ(ProportionalSplit(10, w2, caps2), (std::vector<int64_t>{8, 2}));  // 7.5 / 2.5
}

TEST(ProportionalSplitTest, ACappedRankKeepsItsCapAndTheRestIsResplit) {
  std::vector<double> w = {8, 1, 1};
  std::vector<int64_t> caps = {5, 100, 100};
  std::vector<int64_t> s = ProportionalSplit(20, w, caps);
  EXPECT_EQ(s, (std::vector<int64_t>{5, 8, 7}));
  EXPECT_EQ(Sum(s), 20);
}

TEST(ProportionalPolicyTest, SharesFollowMeasuredThroughputInOneWindow) {
  auto p = MakeProportionalPolicy({10, 10}, {20, 20});
  // Rank 0 does 10 samples in 10 ms, rank 1 in 30 ms: throughputs 1 and 1/3.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(p->Observe(0, 10).ok());
    ASSERT_TRUE(p->Observe(1, 30).ok());
    ASSERT_TRUE(p->EndIteration().ok());
  }
  EXPECT_EQ(p->shares(), (std::vector<int64_t>{10, 10}));  // only at the window boundary
  ASSERT_TRUE(p->EndWindow().ok());
  EXPECT_EQ(p->shares(), (std::vector<int64_t>{15, 5}));
}

struct LbbCase {
  std::vector<double> times;
  std::vector<int64_t> after;
};

TEST(LbbPolicyTest, StraggleLevelPicksHoldOneSampleOrResolve) {
  // (max - min) / mean: 4% holds; 10% moves one sample from the slowest to the fastest.
  auto hold = MakeLbbPolicy({10, 10}, {20, 20}, {0, 0});
  ASSERT_TRUE(hold->Observe(0, 102).ok());
  ASSERT_TRUE(hold->Observe(1, 98).ok());
  ASSERT_TRUE(hold->EndIteration().ok());
  EXPECT_EQ(hold->shares(), (std::vector<int64_t>{10, 10}));
  auto nudge = MakeLbbPolicy({10, 10}, {20, 20}, {0, 0});
  ASSERT_TRUE(nudge->Observe(0, 105).ok());
  ASSERT_TRUE(nudge->Observe(1, 95).ok());
  ASSERT_TRUE(nudge->EndIteration().ok());
  EXPECT_EQ(nudge->shares(), (std::vector<int64_t>{9, 11}));
  // 100% straggle re-solves t = startup + n / throughput: startup 10, rank 0 at 2 ms/sample,
  // rank 1 at 0.5 ms/sample; 10 + 2 n0 = 10 + 0.5 n1 with n0 + n1 = 20 -> 4 / 16.
  auto solve = MakeLbbPolicy({10, 10}, {20, 20}, {10, 10});
  ASSERT_TRUE(solve->Observe(0, 30).ok());
  ASSERT_TRUE(solve->Observe(1, 15).ok());
  ASSERT_TRUE(solve->EndIteration().ok());
  EXPECT_EQ(solve->shares(), (std::vector<int64_t>{4, 16}));
  // Within the cool-down a large straggle only moves one sample.
  ASSERT_TRUE(solve->Observe(0, 30).ok());
  ASSERT_TRUE(solve->Observe(1, 15).ok());
  ASSERT_TRUE(solve->EndIteration().ok());
  EXPECT_EQ(solve->shares(), (std::vector<int64_t>{3, 17}));
}

TEST(LbbPolicyTest, ResolvesAgainOnlyAfterTheCooldown) {
  auto p = MakeLbbPolicy({10, 10}, {20, 20}, {10, 10});
  auto iterate = [&](double t0, double t1) {
    ASSERT_TRUE(p->Observe(0, t0).ok());
    ASSERT_TRUE(p->Observe(1, t1).ok());
    ASSERT_TRUE(p->EndIteration().ok());
  };
  iterate(30, 15);  // iteration 0: re-solve to 4 / 16, cool-down starts
  ASSERT_EQ(p->shares(), (std::vector<int64_t>{4, 16}));
  for (int64_t it = 1; it < kLbbCooldown - 1; ++it) iterate(100, 100);  // quiet
  EXPECT_EQ(p->shares(), (std::vector<int64_t>{4, 16}));
  iterate(60, 10.5);  // the cool-down's last iteration: one sample only
  EXPECT_EQ(p->shares(), (std::vector<int64_t>{3, 17}));
  iterate(60, 10.5);  // cool-down over: re-solve (rank 0 at 50 / 3 ms per sample gets nothing)
  EXPECT_EQ(p->shares(), (std::vector<int64_t>{0, 20}));
}

}  // namespace
}  // namespace hetrun::tuner

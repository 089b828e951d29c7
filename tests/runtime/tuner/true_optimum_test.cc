// The exact optimum over non-decreasing true curves, checked against the one-sample greedy.
#include "hetrun/tuner/true_optimum.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "hetrun/tuner/random.h"

namespace hetrun::tuner {
namespace {

// The greedy: give each next sample to the rank whose time after taking it is smallest. Optimal
// for min-max with non-decreasing costs (an exchange argument); O(batch * ranks).
double Greedy(int64_t batch, const std::vector<TrueRank>& ranks) {
  std::vector<int64_t> n(ranks.size(), 0);
  for (int64_t s = 0; s < batch; ++s) {
    size_t best = ranks.size();
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (n[r] >= ranks[r].cap) continue;
      if (best == ranks.size() || ranks[r].Ms(n[r] + 1) < ranks[best].Ms(n[best] + 1)) best = r;
    }
    ++n[best];
  }
  double worst = 0;
  for (size_t r = 0; r < ranks.size(); ++r) worst = std::max(worst, ranks[r].Ms(n[r]));
  return worst;
}

ScenarioRank RandomProfile(Random& random) {
  ScenarioRank r;
  r.family = "hopper";
  int64_t n = 0;
  double ms = 1 + 20 * random.Uniform();
  const int points = 2 + static_cast<int>(random.Next() % 4);
  for (int i = 0; i < points; ++i) {
    r.profile.push_back({n, ms});
    n += 1 + static_cast<int64_t>(random.Next() % 40);
    // Flat stretches (knees) as often as slopes, steep ones too.
    ms += random.Uniform() < 0.3 ? 0 : 40 * random.Uniform() * random.Uniform();
  }
  return r;
}

TEST(TrueOptimumTest, EqualsTheOneSampleGreedyOnRandomProfiles) {
  Random random(11);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t count = 1 + random.Next() % 6;
    std::vector<ScenarioRank> curves;
    for (size_t r = 0; r < count; ++r) curves.push_back(RandomProfile(random));
    std::vector<TrueRank> ranks;
    int64_t room = 0;
    for (size_t r = 0; r < count; ++r) {
      int64_t cap = random.Uniform() < 0.3 ? static_cast<int64_t>(random.Next() % 60) : 200;
      ranks.push_back({&curves[r], 0.5 + 2 * random.Uniform(), cap});
      room += cap;
    }
    const int64_t batch = std::min<int64_t>(room, static_cast<int64_t>(random.Next() % 200));
    Result<double> exact = OptimalIterationMs(batch, ranks);
    ASSERT_TRUE(exact.ok()) << exact.status().ToString();
    EXPECT_NEAR(*exact, Greedy(batch, ranks), 1e-9 * *exact) << "trial " << trial;
  }
}

// Every split of `batch` over up to 3 ranks, each rank paying its micro-batch cost for the
// stage-wide count max_r ceil(n_r / max_micro_batch_r).
double BruteForceWithMicroBatches(int64_t batch, const std::vector<TrueRank>& ranks) {
  double best = -1;
  std::vector<int64_t> n(ranks.size(), 0);
  auto visit = [&](auto&& self, size_t r, int64_t left) -> void {
    if (r + 1 == ranks.size()) {
      if (left > ranks[r].cap) return;
      n[r] = left;
      int64_t count = 0;
      for (size_t q = 0; q < ranks.size(); ++q) {
        count = std::max(count, ranks[q].rank->MicroBatches(n[q]));
      }
      double worst = 0;
      for (size_t q = 0; q < ranks.size(); ++q) {
        const double micro = ranks[q].rank->ms_per_micro_batch * static_cast<double>(count);
        worst = std::max(worst, ranks[q].slowdown * (ranks[q].rank->TrueMs(n[q]) + micro));
      }
      if (best < 0 || worst < best) best = worst;
      return;
    }
    for (int64_t k = 0; k <= std::min(left, ranks[r].cap); ++k) {
      n[r] = k;
      self(self, r + 1, left - k);
    }
  };
  visit(visit, 0, batch);
  return best;
}

TEST(TrueOptimumTest, MicroBatchCostsEqualTheBruteForceOverEverySplit) {
  Random random(5);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t count = 1 + random.Next() % 3;
    std::vector<ScenarioRank> curves;
    for (size_t r = 0; r < count; ++r) {
      ScenarioRank rank;
      rank.family = "hopper";
      rank.ms_fixed = 1 + 10 * random.Uniform();
      rank.ms_per_sample = 0.1 + 2 * random.Uniform();
      rank.max_micro_batch = 1 + static_cast<int64_t>(random.Next() % 8);
      rank.ms_per_micro_batch = random.Uniform() < 0.2 ? 0 : 5 * random.Uniform();
      curves.push_back(rank);
    }
    std::vector<TrueRank> ranks;
    for (size_t r = 0; r < count; ++r) ranks.push_back({&curves[r], 0.5 + random.Uniform(), 40});
    const int64_t batch = static_cast<int64_t>(random.Next() % 40);
    Result<double> exact = OptimalIterationMsWithMicroBatches(batch, ranks);
    ASSERT_TRUE(exact.ok()) << exact.status().ToString();
    EXPECT_NEAR(*exact, BruteForceWithMicroBatches(batch, ranks), 1e-9 * *exact)
        << "trial " << trial;
  }
}

TEST(TrueOptimumTest, WithoutMicroBatchCostsBothOptimaAgree) {
  ScenarioRank fast{"hopper", 12, 0.4, {}, 0, 16, 0};
  ScenarioRank slow{"ampere", 15, 1.0, {}, 0, 16, 0};
  std::vector<TrueRank> ranks = {{&fast, 1, 512}, {&slow, 1, 512}};
  Result<double> plain = OptimalIterationMs(512, ranks);
  Result<double> micro = OptimalIterationMsWithMicroBatches(512, ranks);
  ASSERT_TRUE(plain.ok() && micro.ok());
  EXPECT_EQ(*plain, *micro);
}

TEST(TrueOptimumTest, ARankGivenNothingStillPaysItsFixedTime) {
  ScenarioRank fast{"hopper", 1, 1, {}, 0, 0};
  ScenarioRank dead{"ampere", 50, 100, {}, 0, 0};
  std::vector<TrueRank> ranks = {{&fast, 1, 10}, {&dead, 1, 10}};
  Result<double> best = OptimalIterationMs(5, ranks);
  ASSERT_TRUE(best.ok());
  EXPECT_DOUBLE_EQ(*best, 50);
}

TEST(TrueOptimumTest, CapsThatCannotHoldTheBatchAreAnError) {
  ScenarioRank line{"hopper", 1, 1, {}, 0, 0};
  std::vector<TrueRank> ranks = {{&line, 1, 3}, {&line, 1, 4}};
  EXPECT_EQ(OptimalIterationMs(8, ranks).status().code(), StatusCode::kInvalidArgument);
}

TEST(TrueOptimumTest, HugeBatchesCostNoMoreThanSmallOnes) {
  ScenarioRank a{"hopper", 3, 0.001, {}, 0, 0};
  ScenarioRank b{"ampere", 5, 0.003, {}, 0, 0};
  const int64_t batch = int64_t{1} << 40;
  std::vector<TrueRank> ranks = {{&a, 1, batch}, {&b, 1, batch}};
  Result<double> best = OptimalIterationMs(batch, ranks);
  ASSERT_TRUE(best.ok());
  // Continuous equal-time split: 3 + 0.001 x = 5 + 0.003 (B - x).
  const double x = (2 + 0.003 * static_cast<double>(batch)) / 0.004;
  EXPECT_NEAR(*best, 3 + 0.001 * x, 0.01);
}

}  // namespace
}  // namespace hetrun::tuner

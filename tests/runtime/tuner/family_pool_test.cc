// Family pooling: identical ranks share one line, different ones keep theirs, outliers untouched.
#include "hetrun/tuner/family_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hetrun/tuner/random.h"

namespace hetrun::tuner {
namespace {

const int32_t kHopper = FamilyPoolKey("hopper");
const int32_t kAmpere = FamilyPoolKey("ampere");

// A rank measured with relative error `error` on its level (a + c n), reported noise `sigma`.
RankFit Fit(int32_t family, double a, double c, int64_t n, double error, double sigma) {
  RankFit f;
  f.family = family;
  f.a_ms = a * (1 + error);
  f.c_ms = c * (1 + error);
  f.n = n;
  f.cap = 1000;
  f.sigma_ms = sigma * PredictedMs(f, n);
  return f;
}

double Level(const RankFit& f) {
  return PredictedMs(f, f.n);
}

TEST(FamilyPoolTest, KeysAreStableNonZeroAndZeroForNoFamily) {
  EXPECT_EQ(FamilyPoolKey(""), 0);
  EXPECT_NE(kHopper, 0);
  EXPECT_NE(kHopper, kAmpere);
  EXPECT_EQ(FamilyPoolKey("hopper"), kHopper);
}

TEST(FamilyPoolTest, IdenticalRanksMeasuredWithNoiseShareOneLevelAndTheirErrorShrinks) {
  Random random(11);
  std::vector<RankFit> fits;
  for (int r = 0; r < 64; ++r)
    fits.push_back(Fit(kHopper, 12, 0.4, 230, 0.02 * random.Normal(), 0.02));
  std::vector<RankFit> pooled = PoolFamilies(fits, {});
  double worst_before = 0, worst_after = 0;
  const double truth = 12 + 0.4 * 230;
  for (size_t r = 0; r < fits.size(); ++r) {
    worst_before = std::max(worst_before, std::fabs(Level(fits[r]) / truth - 1));
    worst_after = std::max(worst_after, std::fabs(Level(pooled[r]) / truth - 1));
    EXPECT_LT(pooled[r].sigma_ms, fits[r].sigma_ms) << r;
  }
  EXPECT_GT(worst_before, 0.03);  // the worst of 64 draws at 2%
  EXPECT_LT(worst_after, 0.01);   // about 2% / sqrt(64) for the family's mean, plus what is left
}

TEST(FamilyPoolTest, ARankFarSlowerThanItsFamilyKeepsItsOwnFit) {
  Random random(5);
  std::vector<RankFit> fits;
  for (int r = 0; r < 16; ++r)
    fits.push_back(Fit(kHopper, 12, 0.4, 230, 0.01 * random.Normal(), 0.01));
  fits[3] = Fit(kHopper, 12 * 1.3, 0.4 * 1.3, 230, 0, 0.01);  // a sick GPU, 30% slower
  std::vector<RankFit> pooled = PoolFamilies(fits, {});
  EXPECT_EQ(std::memcmp(&pooled[3], &fits[3], sizeof(RankFit)), 0);
  // The healthy ranks are pooled among themselves, not pulled toward the sick one.
  for (size_t r = 0; r < fits.size(); ++r) {
    if (r == 3) continue;
    EXPECT_NEAR(Level(pooled[r]) / (12 + 0.4 * 230), 1, 0.01) << r;
  }
}

TEST(FamilyPoolTest, RanksThatReallyDifferKeepMostOfTheirDifference) {
  // Levels spread by 10% while each is measured to 0.5%: the spread is real, not noise.
  std::vector<RankFit> fits;
  for (int r = 0; r < 8; ++r)
    fits.push_back(Fit(kHopper, 12, 0.4, 230, 0.1 * (r - 3.5) / 3.5, 0.005));
  std::vector<RankFit> pooled = PoolFamilies(fits, {});
  for (size_t r = 0; r < fits.size(); ++r) {
    EXPECT_NEAR(Level(pooled[r]) / Level(fits[r]), 1, 0.005) << r;
  }
}

TEST(FamilyPoolTest, FamiliesAreNotMixedAndUnknownOrSmallFamiliesAreLeftAlone) {
  std::vector<RankFit> fits = {
      Fit(kHopper, 12, 0.4, 230, 0.01, 0.02), Fit(kHopper, 12, 0.4, 230, -0.01, 0.02),
      Fit(kHopper, 12, 0.4, 230, 0, 0.02),    Fit(kAmpere, 20, 1.2, 90, 0.03, 0.02),
      Fit(kAmpere, 20, 1.2, 90, -0.03, 0.02), Fit(0, 12, 0.4, 230, 0.05, 0.02),
      Fit(0, 12, 0.4, 230, -0.05, 0.02),      Fit(0, 12, 0.4, 230, 0, 0.02),
  };
  std::vector<RankFit> pooled = PoolFamilies(fits, {});
  // Three hoppers whose levels spread less than their noise: one level.
  EXPECT_NEAR(Level(pooled[0]), Level(pooled[1]), 1e-9 * Level(pooled[0]));
  EXPECT_NEAR(Level(pooled[0]) / (12 + 0.4 * 230), 1, 0.002);
  // Two amperes (fewer than min_ranks = 3) and the ranks without a family are unchanged.
  for (size_t r = 3; r < fits.size(); ++r) {
    EXPECT_EQ(std::memcmp(&pooled[r], &fits[r], sizeof(RankFit)), 0) << r;
  }
  FamilyPoolOptions off;
  off.enabled = false;
  std::vector<RankFit> same = PoolFamilies(fits, off);
  EXPECT_EQ(std::memcmp(same.data(), fits.data(), fits.size() * sizeof(RankFit)), 0);
}

TEST(FamilyPoolTest, FitsWithoutANoiseEstimateOrAnEstimateAtAllAreNotPooled) {
  std::vector<RankFit> fits = {Fit(kHopper, 12, 0.4, 230, 0.02, 0.02),
                               Fit(kHopper, 12, 0.4, 230, -0.02, 0.02),
                               Fit(kHopper, 12, 0.4, 230, 0.01, 0.0),  // sigma unknown
                               RankFit{}};                             // no estimate yet
  fits[3].family = kHopper;
  std::vector<RankFit> pooled = PoolFamilies(fits, {});
  EXPECT_EQ(std::memcmp(pooled.data(), fits.data(), fits.size() * sizeof(RankFit)), 0);
}

}  // namespace
}  // namespace hetrun::tuner

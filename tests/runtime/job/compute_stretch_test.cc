#include "hetrun/job/compute_stretch.h"

#include <gtest/gtest.h>

namespace hetrun {
namespace {

// Real region times of a rank with fixed cost `c` and `b` seconds per sample, no noise.
void ObserveLine(ComputeStretch& s, double c, double b, std::initializer_list<int64_t> counts) {
  for (int64_t n : counts) s.Observe(n, c + b * static_cast<double>(n));
}

TEST(ComputeStretchTest, WholeFactorStretchesTheWholeRegion) {
  ComputeStretch s;
  s.SetFactors(3.0, 1.0);
  ObserveLine(s, 0.010, 0.001, {16, 4});
  EXPECT_DOUBLE_EQ(s.TargetSeconds(0.030, 20), 0.090);
}

TEST(ComputeStretchTest, BeforeTwoDistinctCountsThePerSampleFactorStretchesEverything) {
  ComputeStretch s;
  s.SetFactors(1.0, 3.0);
  EXPECT_FALSE(s.FixedSeconds().has_value());
  ObserveLine(s, 0.010, 0.001, {16, 16, 16});
  EXPECT_FALSE(s.FixedSeconds().has_value());
  EXPECT_DOUBLE_EQ(s.TargetSeconds(0.026, 16), 0.078);
}

TEST(ComputeStretchTest, FitsTheLineAndStretchesOnlyThePerSamplePart) {
  ComputeStretch s;
  s.SetFactors(1.0, 3.17);
  ObserveLine(s, 0.020, 0.0005, {16, 16, 5, 7, 5});
  ASSERT_TRUE(s.FixedSeconds().has_value());
  EXPECT_NEAR(*s.FixedSeconds(), 0.020, 1e-9);
  EXPECT_NEAR(*s.PerSampleSeconds(), 0.0005, 1e-9);
  const double t = 0.020 + 0.0005 * 5;  // on the line: c + k (t - c)
  EXPECT_NEAR(s.TargetSeconds(t, 5), 0.020 + 3.17 * (t - 0.020), 1e-9);
}

TEST(ComputeStretchTest, HostNoiseIsKeptNotMultiplied) {
  ComputeStretch s;
  s.SetFactors(1.0, 3.0);
  ObserveLine(s, 0.020, 0.001, {16, 4});
  const double noisy = 0.020 + 0.001 * 4 + 0.015;  // 15 ms of another process's time slice
  EXPECT_NEAR(s.TargetSeconds(noisy, 4), noisy + 2.0 * 0.004, 1e-9);
}

TEST(ComputeStretchTest, IntervalsSoFarGetTheirProportionOfTheAddition) {
  ComputeStretch s;
  s.SetFactors(1.0, 3.0);
  ObserveLine(s, 0.020, 0.001, {16, 4});
  // Half of a 4-sample step's fitted 24 ms: half of the 8 ms addition.
  EXPECT_NEAR(s.TargetSeconds(0.012, 4), 0.012 + 0.004, 1e-9);
}

TEST(ComputeStretchTest, WholeAndPerSampleFactorsCompose) {
  ComputeStretch s;
  s.SetFactors(2.0, 3.0);
  ObserveLine(s, 0.010, 0.001, {10, 20});
  EXPECT_NEAR(s.TargetSeconds(0.030, 20), 2.0 * (0.010 + 3.0 * 0.020), 1e-9);
}

TEST(ComputeStretchTest, FitIsClampedToNonNegativeCosts) {
  ComputeStretch slope_down;  // noise that makes more samples look faster: no per-sample part
  slope_down.SetFactors(1.0, 3.0);
  slope_down.Observe(4, 0.030);
  slope_down.Observe(16, 0.020);
  EXPECT_DOUBLE_EQ(*slope_down.PerSampleSeconds(), 0.0);
  EXPECT_DOUBLE_EQ(slope_down.TargetSeconds(0.025, 16), 0.025);
  ComputeStretch negative;  // an intercept below zero
  negative.Observe(10, 0.010);
  negative.Observe(20, 0.030);
  EXPECT_DOUBLE_EQ(*negative.FixedSeconds(), 0.0);
}

TEST(ComputeStretchTest, KeepsTheLastFitOnceTheHistoryHoldsOneCount) {
  ComputeStretch s;
  s.SetFactors(1.0, 2.0);
  ObserveLine(s, 0.015, 0.001, {16, 5});
  for (size_t i = 0; i < ComputeStretch::kHistory + 5; ++i) ObserveLine(s, 0.015, 0.001, {5});
  ASSERT_TRUE(s.FixedSeconds().has_value());
  EXPECT_NEAR(*s.FixedSeconds(), 0.015, 1e-9);
}

}  // namespace
}  // namespace hetrun

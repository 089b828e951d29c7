// CostModel: medians per window, least squares with forgetting, degenerate inputs.
#include "hetrun/tuner/cost_model.h"

#include <gtest/gtest.h>

namespace hetrun::tuner {
namespace {

WindowPoint Point(int64_t n, double ms) {
  return {n, ms, 0, 10};
}

TEST(CostModelTest, RecoversTheLineFromTwoNoiseFreeSampleCounts) {
  CostModel model;
  model.AddPoint(Point(100, 4 + 100));
  model.AddPoint(Point(150, 4 + 150));
  EXPECT_NEAR(model.a_ms(), 4, 1e-9);
  EXPECT_NEAR(model.c_ms(), 1, 1e-12);
}

TEST(CostModelTest, SingleDistinctSampleCountFallsBackToProportional) {
  CostModel model;
  model.AddPoint(Point(64, 128));
  model.AddPoint(Point(64, 128));
  EXPECT_EQ(model.a_ms(), 0);
  EXPECT_DOUBLE_EQ(model.c_ms(), 2);
}

TEST(CostModelTest, OnlyZeroSamplesSeenGivesTheFixedTime) {
  CostModel model;
  model.AddPoint(Point(0, 7));
  EXPECT_EQ(model.a_ms(), 7);
  EXPECT_GT(model.c_ms(), 0);
}

TEST(CostModelTest, NegativeFittedSlopeKeepsAPositiveModel) {
  CostModel model;
  model.AddPoint(Point(100, 200));
  model.AddPoint(Point(200, 190));  // slower with fewer samples: noise or a bad window
  EXPECT_GT(model.c_ms(), 0);
  EXPECT_GE(model.a_ms(), 0);
  // Taken as flat, read at the current share: the level stays where the windows put it.
  EXPECT_NEAR(model.Predict(200), 192, 4);
  EXPECT_LT(model.Predict(150), model.Predict(200));
}

TEST(CostModelTest, NegativeInterceptFitsThroughTheOrigin) {
  CostModel model;
  model.AddPoint(Point(100, 95));
  model.AddPoint(Point(200, 205));
  EXPECT_EQ(model.a_ms(), 0);
  EXPECT_GT(model.c_ms(), 0.95);
}

TEST(CostModelTest, WindowMedianIgnoresTenfoldOutliers) {
  std::vector<Observation> window;
  for (int i = 0; i < 10; ++i) window.push_back({64, i < 3 ? 1000.0 : 100.0 + i * 0.1});
  std::vector<WindowPoint> points = SummarizeWindow(window);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_NEAR(points[0].median_ms, 100.5, 0.3);
  EXPECT_EQ(points[0].count, 10);
}

TEST(CostModelTest, SummarizeGivesOnePointPerDistinctSampleCount) {
  std::vector<Observation> window = {{10, 5}, {20, 9}, {10, 7}, {20, 11}, {10, 6}};
  std::vector<WindowPoint> points = SummarizeWindow(window);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].samples, 10);
  EXPECT_EQ(points[0].median_ms, 6);
  EXPECT_EQ(points[1].samples, 20);
  EXPECT_EQ(points[1].median_ms, 10);
}

TEST(CostModelTest, ASpeedChangeRescalesTheModelAtOnce) {
  CostModel model;
  model.AddPoint(Point(100, 104));
  model.AddPoint(Point(150, 154));
  EXPECT_TRUE(model.AddPoint(Point(150, 2 * 154)));
  EXPECT_NEAR(model.a_ms(), 8, 1e-9);
  EXPECT_NEAR(model.c_ms(), 2, 1e-12);
}

TEST(CostModelTest, ForgettingFavoursRecentWindows) {
  CostModelOptions options;
  options.change_floor = 10;  // no change detection: forgetting alone
  CostModel model(options);
  model.AddPoint(Point(100, 100));
  for (int i = 0; i < 30; ++i) model.AddPoint(Point(100, 120));
  EXPECT_NEAR(model.Predict(100), 120, 0.1);
}

}  // namespace
}  // namespace hetrun::tuner

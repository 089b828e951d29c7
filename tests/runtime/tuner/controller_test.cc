// The controller as runtime/torch drives it: one Controller per rank, RankFit all-gathered.
#include "hetrun/tuner/controller.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "hetrun/tuner/random.h"

namespace hetrun::tuner {
namespace {

struct TrueRank {
  double a;
  double c;
};

// A group of ranks, each with its own Controller, exchanging RankFit bytes every window.
class Group {
 public:
  Group(std::vector<TrueRank> truth, int64_t batch, double noise, ControllerOptions options = {})
      : truth_(std::move(truth)), slowdown_(truth_.size(), 1.0), noise_(noise), random_(3) {
    std::vector<int64_t> initial(truth_.size(), batch / static_cast<int64_t>(truth_.size()));
    initial[0] += batch - std::accumulate(initial.begin(), initial.end(), int64_t{0});
    for (size_t r = 0; r < truth_.size(); ++r) {
      ranks_.push_back(*Controller::Create(options, batch, static_cast<int>(r), batch, initial));
    }
  }

  // Runs one window; returns true when the shares changed at its end.
  bool RunWindow() {
    std::vector<int64_t> before = ranks_[0].shares();
    while (!ranks_[0].AtWindowBoundary()) {
      for (size_t r = 0; r < ranks_.size(); ++r) {
        double ms = TrueMs(r, ranks_[r].local_share()) * (1 + noise_ * random_.Normal());
        EXPECT_TRUE(ranks_[r].Record(ranks_[r].local_share(), ms).ok());
      }
    }
    std::vector<RankFit> gathered;
    for (Controller& c : ranks_) gathered.push_back(c.CloseWindow());
    for (Controller& c : ranks_) EXPECT_TRUE(c.Apply(gathered).ok());
    for (Controller& c : ranks_) EXPECT_EQ(c.shares(), ranks_[0].shares()) << "ranks disagree";
    return ranks_[0].shares() != before;
  }

  double TrueMs(size_t r, int64_t n) const {
    return slowdown_[r] * (truth_[r].a + truth_[r].c * static_cast<double>(n));
  }
  double IterationMs() const {
    double worst = 0;
    for (size_t r = 0; r < ranks_.size(); ++r) worst = std::max(worst, TrueMs(r, shares()[r]));
    return worst;
  }
  double OptimalMs(int64_t batch) const {
    std::vector<RankFit> fits;
    for (size_t r = 0; r < truth_.size(); ++r) {
      fits.push_back({slowdown_[r] * truth_[r].a, slowdown_[r] * truth_[r].c, batch, 0});
    }
    return PredictedIterationMs(fits, *SolveShares(batch, fits));
  }
  const std::vector<int64_t>& shares() const { return ranks_[0].shares(); }
  void Slow(size_t r, double factor) { slowdown_[r] = factor; }

 private:
  std::vector<TrueRank> truth_;
  std::vector<double> slowdown_;
  double noise_;
  Random random_;
  std::vector<Controller> ranks_;
};

const std::vector<TrueRank> kMix = {{4, 1}, {4, 1}, {24, 3.17}, {24, 3.17}};

TEST(ControllerTest, ConvergesFromUniformWithinThreeWindows) {
  Group group(kMix, 512, 0.03);
  for (int w = 0; w < 3; ++w) group.RunWindow();
  EXPECT_LE(group.IterationMs(), 1.05 * group.OptimalMs(512));
}

TEST(ControllerTest, StationaryNoiseRarelyMovesSharesAfterConvergence) {
  Group group(kMix, 512, 0.05);
  for (int w = 0; w < 5; ++w) group.RunWindow();
  int changes = 0;
  const int windows = 200;
  for (int w = 0; w < windows; ++w) changes += group.RunWindow() ? 1 : 0;
  EXPECT_LT(changes, windows / 10) << "shares changed in " << changes << " of " << windows;
  EXPECT_LE(group.IterationMs(), 1.03 * group.OptimalMs(512));
}

TEST(ControllerTest, ReactsToATwofoldSlowdownWithinThreeWindows) {
  Group group(kMix, 512, 0.05);
  for (int w = 0; w < 10; ++w) group.RunWindow();
  int64_t before = group.shares()[0];
  group.Slow(0, 2.0);
  for (int w = 0; w < 3; ++w) group.RunWindow();
  EXPECT_LT(group.shares()[0], before * 3 / 4);
  EXPECT_LE(group.IterationMs(), 1.05 * group.OptimalMs(512));
}

TEST(ControllerTest, HoldsABalancedSplitInsideTheDeadBand) {
  Group group({{5, 1}, {5, 1}}, 200, 0.0);
  for (int w = 0; w < 5; ++w) EXPECT_FALSE(group.RunWindow());
  EXPECT_EQ(group.shares(), (std::vector<int64_t>{100, 100}));
}

TEST(ControllerTest, StepLimitBoundsTheSamplesMovedPerWindow) {
  ControllerOptions options;
  options.max_step = 0.1;
  Group group({{0, 1}, {0, 4}}, 500, 0.0, options);
  group.RunWindow();
  EXPECT_EQ(group.shares(), (std::vector<int64_t>{300, 200}));  // 50 = 10% of 500 moved
  for (int w = 0; w < 5; ++w) group.RunWindow();
  EXPECT_EQ(group.shares(), (std::vector<int64_t>{400, 100}));
}

TEST(ControllerTest, SharesChangeOnlyAtWindowBoundaries) {
  ControllerOptions options;
  options.window = 4;
  Controller c = *Controller::Create(options, 10, 0, 10, {5, 5});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Record(5, 10).ok());
    EXPECT_FALSE(c.AtWindowBoundary());
    EXPECT_EQ(c.local_share(), 5);
  }
  ASSERT_TRUE(c.Record(5, 10).ok());
  EXPECT_TRUE(c.AtWindowBoundary());
}

TEST(ControllerTest, DisagreeingRecordsAreAnError) {
  ShareController group = *ShareController::Create({}, 10, {5, 5});
  std::vector<RankFit> gathered = {{1, 1, 10, 5}, {1, 1, 10, 4}};
  Result<Decision> d = group.Decide(gathered);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(group.Decide(std::vector<RankFit>{{1, 1, 10, 5}}).ok());
}

TEST(ControllerTest, ACapBelowTheCurrentShareIsHonouredAtOnce) {
  ShareController group = *ShareController::Create({}, 10, {5, 5});
  std::vector<RankFit> gathered = {{1, 1, 3, 5}, {1, 1, 10, 5}};
  Result<Decision> d = group.Decide(gathered);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->shares, (std::vector<int64_t>{3, 7}));
}

TEST(ControllerTest, RejectsBadOptionsAndObservations) {
  ControllerOptions options;
  options.window = 0;
  EXPECT_FALSE(ShareController::Create(options, 10, {10}).ok());
  EXPECT_FALSE(ShareController::Create({}, 10, {4, 5}).ok());
  RankObserver observer;
  EXPECT_FALSE(observer.Record(-1, 1).ok());
  EXPECT_FALSE(observer.Record(1, 0).ok());
  EXPECT_FALSE(observer.Record(1, NAN).ok());
}

TEST(ControllerTest, LimitStepMovesProportionallyAndKeepsTheSum) {
  std::vector<int64_t> from = {10, 10, 10, 10};
  std::vector<int64_t> to = {20, 16, 4, 0};
  std::vector<int64_t> next = LimitStep(from, to, 8);
  EXPECT_EQ(std::accumulate(next.begin(), next.end(), int64_t{0}), 40);
  for (size_t r = 0; r < from.size(); ++r) {
    EXPECT_GE(next[r], std::min(from[r], to[r]));
    EXPECT_LE(next[r], std::max(from[r], to[r]));
  }
  EXPECT_EQ(next, (std::vector<int64_t>{15, 13, 7, 5}));
}

}  // namespace
}  // namespace hetrun::tuner

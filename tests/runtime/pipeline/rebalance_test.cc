#include "hetrun/pipeline/rebalance.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace hetrun::pipeline {
namespace {

// A layout of `counts` layers per stage, one rank per stage, `micro` micro-batches.
JobLayout Layout(const std::vector<int64_t>& counts, int64_t micro,
                 std::vector<double> costs = {}) {
  JobLayout layout;
  layout.micro_batches = micro;
  int64_t first = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    layout.stages.push_back({first, counts[s], {static_cast<int>(s)}, {""}, {1.0}});
    first += counts[s];
  }
  layout.num_layers = first;
  layout.layer_costs = std::move(costs);
  return layout;
}

// The devices as they truly are: per-stage speed (cost per ms) and per-layer cost; a window's
// stage times follow from a split, times a multiplicative noise in [1 - noise, 1 + noise].
struct TrueJob {
  std::vector<double> speeds;
  std::vector<double> costs;
  double noise = 0;
  bool layer_times = false;
  std::mt19937 gen{7};

  std::vector<StageMeasurement> Window(const std::vector<int64_t>& counts) {
    std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
    std::vector<StageMeasurement> window;
    int64_t first = 0;
    for (size_t s = 0; s < counts.size(); ++s) {
      StageMeasurement m{first, counts[s], 0, 0, {}};
      double cost = 0;
      for (int64_t l = first; l < first + counts[s]; ++l) {
        cost += costs[static_cast<size_t>(l)];
        if (layer_times) m.layer_ms.push_back(costs[static_cast<size_t>(l)] / speeds[s]);
      }
      double t = cost / speeds[s] * (noise > 0 ? jitter(gen) : 1.0);
      m.forward_ms = t / 3;
      m.backward_ms = 2 * t / 3;
      window.push_back(m);
      first += counts[s];
    }
    return window;
  }

  // The exact optimum for the true speeds and costs.
  std::vector<int64_t> Optimum(int64_t micro) const {
    SpeedFit fit{speeds, costs};
    std::vector<int64_t> any(speeds.size(), 1);
    any.back() = static_cast<int64_t>(costs.size()) - static_cast<int64_t>(speeds.size()) + 1;
    auto plan = PlanFromFit(fit, micro, any);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    std::vector<int64_t> counts;
    for (const auto& stage : plan->best.stages) counts.push_back(stage.layers);
    return counts;
  }

  double Iteration(const std::vector<int64_t>& counts, int64_t micro) const {
    auto plan = PlanFromFit(SpeedFit{speeds, costs}, micro, counts);
    return plan.ok() ? plan->compared->iteration_time : -1;
  }
};

// Runs `windows` windows, applying every move; returns the moves made.
int64_t RunWindows(Rebalancer& rebalancer, TrueJob& job, int windows) {
  for (int w = 0; w < windows; ++w) {
    RebalanceDecision d = rebalancer.Decide(job.Window(rebalancer.current_counts()));
    EXPECT_FALSE(d.reason.empty());
    if (d.move) rebalancer.Applied(d);
  }
  return rebalancer.moves();
}

TEST(RebalancerTest, SpeedsThatDifferFromThePlanReachTheTrueOptimumInOneOrTwoMoves) {
  TrueJob job{{1.0, 3.0}, std::vector<double>(16, 1.0)};
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 8), {});
  ASSERT_TRUE(rebalancer.ok()) << rebalancer.status().message();
  int64_t moves = RunWindows(*rebalancer, job, 10);
  EXPECT_GE(moves, 1);
  EXPECT_LE(moves, 2);
  EXPECT_EQ(rebalancer->current_counts(), job.Optimum(8));
  EXPECT_EQ(rebalancer->current_counts(), (std::vector<int64_t>{4, 12}));
}

TEST(RebalancerTest, TheArticlesHandSplitConvergesOnFourStages) {
  // 64 layers, the article's 48/16 over two hopper and two ampere stages made 4 stages.
  TrueJob job{{2.0, 2.0, 1.0, 1.0}, std::vector<double>(64, 1.0)};
  auto rebalancer = Rebalancer::Create(Layout({24, 24, 8, 8}, 16), {});
  ASSERT_TRUE(rebalancer.ok());
  int64_t moves = RunWindows(*rebalancer, job, 12);
  EXPECT_GE(moves, 1);
  EXPECT_LE(moves, 2);
  EXPECT_EQ(rebalancer->current_counts(), job.Optimum(16));
}

TEST(RebalancerTest, TenPercentNoiseOnAFixedSpeedNeverMovesBackAndForth) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    for (const std::vector<int64_t>& start :
         {std::vector<int64_t>{16, 16, 16, 16}, std::vector<int64_t>{22, 22, 10, 10}}) {
      TrueJob job{{1.6, 1.6, 1.0, 1.0}, std::vector<double>(64, 1.0), 0.10};
      job.gen.seed(seed);
      auto rebalancer = Rebalancer::Create(Layout(start, 16), {});
      ASSERT_TRUE(rebalancer.ok());
      int64_t moves = RunWindows(*rebalancer, job, 50);
      EXPECT_LE(moves, 2) << "seed " << seed << " from " << CountsText(start);
      // Wherever it ends, it is within the threshold of the true optimum.
      EXPECT_LE(job.Iteration(rebalancer->current_counts(), 16),
                1.05 * job.Iteration(job.Optimum(16), 16))
          << "seed " << seed << " ended at " << CountsText(rebalancer->current_counts());
    }
  }
}

// Issue 28 item 11: one implausibly fast window (1 ms against ~30 ms; 0.01 ms) moved the
// balanced split 12,22 to 25,9 (33,1) and back 8 windows later: the speeds were means.
TEST(RebalancerTest, ASingleOutlierWindowMovesNothing) {
  for (double outlier_ms : {1.0, 0.01}) {
    SCOPED_TRACE(outlier_ms);
    TrueJob job{{12.0 / 30, 22.0 / 30}, std::vector<double>(34, 1.0)};
    job.noise = 0.02;
    auto rebalancer = Rebalancer::Create(Layout({12, 22}, 4), {});
    ASSERT_TRUE(rebalancer.ok()) << rebalancer.status().message();
    for (int w = 0; w < 14; ++w) {
      std::vector<StageMeasurement> window = job.Window(rebalancer->current_counts());
      if (w == 4) {
        window[0].forward_ms = outlier_ms / 3;
        window[0].backward_ms = 2 * outlier_ms / 3;
      }
      RebalanceDecision d = rebalancer->Decide(window);
      EXPECT_FALSE(d.move) << "window " << w << ": " << d.reason;
      if (d.move) rebalancer->Applied(d);
    }
    EXPECT_EQ(rebalancer->moves(), 0);
    EXPECT_EQ(rebalancer->current_counts(), (std::vector<int64_t>{12, 22}));
  }
}

TEST(RebalancerTest, AGainBelowTheThresholdHolds) {
  // 32/32 on speeds 1.0 and 1.1: the best split, 31/33, gains 2.5%.
  TrueJob job{{1.0, 1.1}, std::vector<double>(64, 1.0)};
  auto rebalancer = Rebalancer::Create(Layout({32, 32}, 8), {});
  ASSERT_TRUE(rebalancer.ok());
  for (int w = 0; w < 5; ++w) {
    RebalanceDecision d = rebalancer->Decide(job.Window(rebalancer->current_counts()));
    EXPECT_FALSE(d.move) << d.reason;
    EXPECT_EQ(d.reason.rfind("hold: ", 0), 0u) << d.reason;
  }
  // A lower threshold takes the same gain.
  auto eager = Rebalancer::Create(Layout({32, 32}, 8),
                                  {.threshold = 0.01, .confirm_windows = 1, .min_windows = 1});
  ASSERT_TRUE(eager.ok());
  RebalanceDecision d = eager->Decide(job.Window(eager->current_counts()));
  EXPECT_TRUE(d.move) << d.reason;
  EXPECT_LT(d.predicted_new_iteration_ms, 0.99 * d.predicted_current_iteration_ms);
}

TEST(RebalancerTest, AMoveIsConfirmedFirstAndTheNextWindowOnlySettles) {
  TrueJob job{{1.0, 3.0}, std::vector<double>(16, 1.0)};
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 4), {});
  ASSERT_TRUE(rebalancer.ok());
  for (int w = 1; w <= 2; ++w) {
    RebalanceDecision measuring = rebalancer->Decide(job.Window({8, 8}));
    EXPECT_FALSE(measuring.move);
    EXPECT_NE(measuring.reason.find("measuring: window " + std::to_string(w) + " of the 3"),
              std::string::npos)
        << measuring.reason;
  }
  RebalanceDecision first = rebalancer->Decide(job.Window({8, 8}));
  EXPECT_FALSE(first.move);
  EXPECT_NE(first.reason.find("confirming: 1 of 2"), std::string::npos) << first.reason;
  EXPECT_EQ(first.new_counts, (std::vector<int64_t>{4, 12}));
  RebalanceDecision second = rebalancer->Decide(job.Window({8, 8}));
  ASSERT_TRUE(second.move) << second.reason;
  EXPECT_EQ(second.reason.rfind("move: 8,8 -> split 4,12", 0), 0u) << second.reason;
  // Predicted per-stage times: 8/1 and 8/3 per micro-batch now, 4/1 and 12/3 after.
  ASSERT_EQ(second.predicted_current_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(second.predicted_current_ms[0], 8.0);
  EXPECT_DOUBLE_EQ(second.predicted_new_ms[0], 4.0);
  EXPECT_DOUBLE_EQ(second.predicted_new_ms[1], 4.0);
  EXPECT_DOUBLE_EQ(second.predicted_current_iteration_ms, 8.0 + 8.0 / 3 + 3 * 8.0);
  EXPECT_DOUBLE_EQ(second.measured_current_iteration_ms, second.predicted_current_iteration_ms);
  rebalancer->Applied(second);
  EXPECT_EQ(rebalancer->current_counts(), (std::vector<int64_t>{4, 12}));
  RebalanceDecision settle = rebalancer->Decide(job.Window({4, 12}));
  EXPECT_FALSE(settle.move);
  EXPECT_NE(settle.reason.find("settling"), std::string::npos) << settle.reason;
  RebalanceDecision after = rebalancer->Decide(job.Window({4, 12}));
  EXPECT_FALSE(after.move);
  EXPECT_NE(after.reason.find("is the best"), std::string::npos) << after.reason;
}

TEST(RebalancerTest, AWinnerThatDriftsBetweenTheConfirmingWindowsStillMoves) {
  // Stage 1 slows from 3 to 2.3 cost/ms over the windows. The speeds are medians over the
  // windows, so the winner follows once most windows show the change: 4,12 after window 4
  // (median 2.65), 5,11 after window 5 (median 2.3). Some move wins in both windows, so the
  // move is taken, and it is window 5's winner.
  TrueJob job{{1.0, 3.0}, std::vector<double>(16, 1.0)};
  RebalanceOptions options;
  options.min_windows = 4;
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 4), options);
  ASSERT_TRUE(rebalancer.ok());
  for (double speed : {3.0, 3.0, 2.3}) {
    job.speeds[1] = speed;
    EXPECT_FALSE(rebalancer->Decide(job.Window({8, 8})).move);
  }
  RebalanceDecision first = rebalancer->Decide(job.Window({8, 8}));
  EXPECT_FALSE(first.move);
  EXPECT_NE(first.reason.find("confirming: 1 of 2"), std::string::npos) << first.reason;
  EXPECT_EQ(first.new_counts, (std::vector<int64_t>{4, 12}));
  RebalanceDecision second = rebalancer->Decide(job.Window({8, 8}));
  ASSERT_TRUE(second.move) << second.reason;
  EXPECT_NE(second.new_counts, first.new_counts);
  EXPECT_EQ(second.new_counts, (std::vector<int64_t>{5, 11}));
  EXPECT_EQ(second.reason.rfind("move: 8,8 -> split 5,11", 0), 0u) << second.reason;
}

TEST(RebalancerTest, AWindowInWhichNoMoveWinsRestartsTheConfirmation) {
  TrueJob job{{1.0, 3.0}, std::vector<double>(16, 1.0)};
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 4), {});
  ASSERT_TRUE(rebalancer.ok());
  for (int w = 1; w <= 2; ++w) EXPECT_FALSE(rebalancer->Decide(job.Window({8, 8})).move);
  RebalanceDecision first = rebalancer->Decide(job.Window({8, 8}));
  EXPECT_NE(first.reason.find("confirming: 1 of 2"), std::string::npos) << first.reason;
  // A window that makes 8,8 look balanced: stage 0 as fast as stage 1 and stage 1 slowed, so the
  // averaged speeds leave no move with the required gain.
  job.speeds = {30.0, 0.3};
  RebalanceDecision none = rebalancer->Decide(job.Window({8, 8}));
  EXPECT_FALSE(none.move);
  EXPECT_EQ(none.reason.find("confirming"), std::string::npos) << none.reason;
  // Back at 1:3, the first window in which a move wins again starts counting from 1.
  job.speeds = {1.0, 3.0};
  bool confirming = false;
  for (int w = 0; w < 8 && !confirming; ++w) {
    RebalanceDecision again = rebalancer->Decide(job.Window({8, 8}));
    ASSERT_FALSE(again.move) << again.reason;
    confirming = again.reason.find("confirming") != std::string::npos;
    if (confirming) {
      EXPECT_NE(again.reason.find("confirming: 1 of 2"), std::string::npos) << again.reason;
    }
  }
  EXPECT_TRUE(confirming);
}

TEST(RebalancerTest, MeasurementsOfAnotherSplitOrWithBadNumbersAreNotUsed) {
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 4), {.confirm_windows = 1, .min_windows = 1});
  ASSERT_TRUE(rebalancer.ok());
  TrueJob job{{1.0, 3.0}, std::vector<double>(16, 1.0)};
  RebalanceDecision other = rebalancer->Decide(job.Window({7, 9}));
  EXPECT_FALSE(other.move);
  EXPECT_NE(other.reason.find("stage 0 measured layers [0, 7) but the split gives it [0, 8)"),
            std::string::npos)
      << other.reason;
  std::vector<StageMeasurement> nan = job.Window({8, 8});
  nan[1].backward_ms = std::nan("");
  EXPECT_NE(rebalancer->Decide(nan).reason.find("stage 1: forward_ms and backward_ms"),
            std::string::npos);
  std::vector<StageMeasurement> one = job.Window({8, 8});
  one.pop_back();
  EXPECT_NE(rebalancer->Decide(one).reason.find("measures 1 stages, the split has 2"),
            std::string::npos);
  // None of them entered the history: a good window moves at once (confirm_windows 1).
  EXPECT_TRUE(rebalancer->Decide(job.Window({8, 8})).move);
}

TEST(RebalancerTest, ASplitLeftBeforeMustWinByTwiceTheThreshold) {
  // Start at 16,48 on speeds 1:3 (the optimum), move to 18,46 by hand; the way back to 16,48
  // gains ~6.5%: enough for a new split, not for one left before (10%).
  TrueJob job{{1.0, 3.0}, std::vector<double>(64, 1.0)};
  auto rebalancer =
      Rebalancer::Create(Layout({16, 48}, 2), {.confirm_windows = 1, .min_windows = 1});
  ASSERT_TRUE(rebalancer.ok());
  RebalanceDecision forced;
  forced.current_counts = {16, 48};
  forced.new_counts = {18, 46};
  rebalancer->Applied(forced);
  rebalancer->Decide(job.Window({18, 46}));  // settling
  RebalanceDecision back = rebalancer->Decide(job.Window({18, 46}));
  EXPECT_EQ(back.new_counts, (std::vector<int64_t>{16, 48}));
  double gain = 1 - back.predicted_new_iteration_ms / back.predicted_current_iteration_ms;
  ASSERT_GT(gain, 0.05) << back.reason;
  ASSERT_LT(gain, 0.10) << back.reason;
  EXPECT_FALSE(back.move) << back.reason;
  EXPECT_NE(
      back.reason.find("below the 10.0% required: a split left before needs 10.0% + noise 0.0%"),
      std::string::npos)
      << back.reason;
  // A split never left, with the same gain, is taken (a fresh re-balancer at 18,46).
  auto fresh = Rebalancer::Create(Layout({18, 46}, 2), {.confirm_windows = 1, .min_windows = 1});
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->Decide(job.Window({18, 46})).move);
}

TEST(RebalancerTest, PerLayerTimesRefitTheLayerCosts) {
  // Layer 0 (an embedding) truly costs 9 blocks; the plan thinks all layers are equal.
  std::vector<double> costs(16, 1.0);
  costs[0] = 9.0;
  TrueJob job{{1.0, 1.0}, costs};
  job.layer_times = true;
  std::vector<std::vector<StageMeasurement>> windows = {job.Window({8, 8})};
  auto fit = FitSpeeds(std::vector<double>(16, 1.0), windows);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  // The median layer of stage 0 gives its speed (1, not 8 / 16 from the stage's total), and
  // layer 0's cost follows from its time.
  EXPECT_DOUBLE_EQ(fit->stage_speeds[0], 1.0);
  EXPECT_DOUBLE_EQ(fit->stage_speeds[1], 1.0);
  EXPECT_DOUBLE_EQ(fit->layer_costs[0], 9.0);
  EXPECT_DOUBLE_EQ(fit->layer_costs[1], 1.0);
  EXPECT_DOUBLE_EQ(fit->layer_costs[8], 1.0);
  // Without layer times the stage's total decides: stage 0 looks half as fast.
  job.layer_times = false;
  std::vector<std::vector<StageMeasurement>> totals = {job.Window({8, 8})};
  auto coarse = FitSpeeds(std::vector<double>(16, 1.0), totals);
  ASSERT_TRUE(coarse.ok());
  EXPECT_DOUBLE_EQ(coarse->stage_speeds[0], 0.5);
  EXPECT_DOUBLE_EQ(coarse->layer_costs[0], 1.0);
  job.layer_times = true;
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 8), {});
  ASSERT_TRUE(rebalancer.ok());
  RunWindows(*rebalancer, job, 10);
  // The true optimum of costs 9,1,...,1 on equal speeds: 12 each -> 4 layers, 12 layers.
  EXPECT_EQ(rebalancer->current_counts(), job.Optimum(8));
  EXPECT_EQ(rebalancer->current_counts(), (std::vector<int64_t>{4, 12}));
}

TEST(RebalancerTest, SameInputsGiveTheSameDecisionsOnEveryRank) {
  TrueJob a{{1.3, 2.9, 1.0}, std::vector<double>(30, 1.0), 0.1};
  TrueJob b = a;
  auto ra = Rebalancer::Create(Layout({10, 10, 10}, 6), {});
  auto rb = Rebalancer::Create(Layout({10, 10, 10}, 6), {});
  ASSERT_TRUE(ra.ok() && rb.ok());
  for (int w = 0; w < 20; ++w) {
    RebalanceDecision da = ra->Decide(a.Window(ra->current_counts()));
    RebalanceDecision db = rb->Decide(b.Window(rb->current_counts()));
    ASSERT_EQ(da.reason, db.reason);
    ASSERT_EQ(da.predicted_new_iteration_ms, db.predicted_new_iteration_ms);
    if (da.move) ra->Applied(da);
    if (db.move) rb->Applied(db);
  }
}

TEST(RebalancerTest, TheSpeedsStandardErrorFollowsTheirSpreadAndRaisesTheGainNeeded) {
  // One stage of one layer measured at 1 ms then 2 ms: speeds 1 and 0.5, mean 0.75, standard
  // deviation 0.3536: relative 0.4714 over sqrt(2) = 1/3.
  std::vector<std::vector<StageMeasurement>> windows = {{{0, 1, 0.5, 0.5, {}}},
                                                        {{0, 1, 1.0, 1.0, {}}}};
  EXPECT_NEAR(SpeedStandardError(std::vector<double>{1.0}, windows), 1.0 / 3, 1e-12);
  EXPECT_EQ(SpeedStandardError(std::vector<double>{1.0}, std::span(windows.data(), 1)), 0.0);
  // Speeds of 1:3 where the plan assumed 1:1 (a 50% gain), but stage 1 alternates between 2x
  // and 1/2x: the decision reports the spread and needs a larger gain.
  TrueJob job{{1.0, 3.0}, std::vector<double>(16, 1.0)};
  auto rebalancer = Rebalancer::Create(Layout({8, 8}, 8), {.noise_margin = 2});
  ASSERT_TRUE(rebalancer.ok());
  RebalanceDecision d;
  for (int w = 0; w < 4; ++w) {
    std::vector<StageMeasurement> window = job.Window(rebalancer->current_counts());
    window[1].forward_ms *= w % 2 ? 2.0 : 0.5;
    window[1].backward_ms *= w % 2 ? 2.0 : 0.5;
    d = rebalancer->Decide(window);
  }
  EXPECT_GT(d.speed_standard_error, 0.3);
  EXPECT_NEAR(d.required_gain, 0.05 + 2 * d.speed_standard_error, 1e-12);
  EXPECT_FALSE(d.move) << d.reason;
  EXPECT_NE(d.reason.find("required: threshold 5.0% + noise"), std::string::npos) << d.reason;
}

TEST(RebalancerTest, OptionsOutOfRangeAreRefused) {
  JobLayout layout = Layout({8, 8}, 4);
  for (RebalanceOptions bad :
       {RebalanceOptions{.threshold = 0}, RebalanceOptions{.threshold = 1},
        RebalanceOptions{.history_windows = 0}, RebalanceOptions{.confirm_windows = 0},
        RebalanceOptions{.min_windows = 9}, RebalanceOptions{.noise_margin = -1},
        RebalanceOptions{.threshold = 0.4, .return_factor = 3}}) {
    auto r = Rebalancer::Create(layout, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("re-balance"), std::string::npos);
  }
  layout.stages[1].first_layer = 9;
  EXPECT_FALSE(Rebalancer::Create(layout, {}).ok());
}

}  // namespace
}  // namespace hetrun::pipeline

// The simulator: deterministic, same noise for every policy, the goals on the example mix.
#include "hetrun/tuner/simulator.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hetrun/tuner/random.h"

namespace hetrun::tuner {
namespace {

Scenario Mix(double noise) {
  Scenario s;
  s.global_batch = 512;
  s.window = 10;
  s.iterations = 300;
  s.noise = noise;
  s.seed = 5;
  ScenarioStage stage{"dp", {}};
  for (int i = 0; i < 2; ++i) stage.ranks.push_back({"hopper", 4, 1, {}, 512, 0});
  for (int i = 0; i < 2; ++i) stage.ranks.push_back({"ampere", 24, 3.17, {}, 512, 0});
  s.stages.push_back(stage);
  return s;
}

TEST(SimulatorTest, SameSeedGivesIdenticalResults) {
  Result<SimulationResult> a = Simulate(Mix(0.05));
  Result<SimulationResult> b = Simulate(Mix(0.05));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->hetrun.windows.size(), 30u);
  for (size_t w = 0; w < a->hetrun.windows.size(); ++w) {
    EXPECT_EQ(a->hetrun.windows[w].shares, b->hetrun.windows[w].shares);
    EXPECT_EQ(a->hetrun.windows[w].iteration_ms, b->hetrun.windows[w].iteration_ms);
  }
}

TEST(SimulatorTest, HetrunConvergesAndBeatsEveryBaselineOnAMix) {
  Result<SimulationResult> r = Simulate(Mix(0.03));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LE(r->hetrun.steady_ratio, 1.02);
  EXPECT_GE(r->hetrun.convergence_windows, 0);
  EXPECT_LE(r->hetrun.convergence_windows, 3);
  ASSERT_EQ(r->baselines.size(), 4u);
  for (const PolicyResult& b : r->baselines) {
    EXPECT_LT(r->hetrun.steady_ratio, b.steady_ratio) << b.name;
  }
  for (const WindowRecord& w : r->hetrun.windows) EXPECT_GE(w.ratio, 1.0);
}

TEST(SimulatorTest, ReconvergesAfterASlowdownAndRecovery) {
  Scenario s = Mix(0.03);
  s.events = {{100, 0, 2.0}, {200, 0, 1.0}};
  Result<SimulationResult> r = Simulate(s);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->hetrun.convergence_by_phase.size(), 3u);
  for (int64_t c : r->hetrun.convergence_by_phase) {
    EXPECT_GE(c, 0);
    EXPECT_LE(c, 3);
  }
}

// The goals of issue 16 on every bundled scenario, from the simulator (deterministic seeds).
TEST(SimulatorTest, EveryBundledScenarioMeetsTheGoalsAgainstProportional) {
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(HETRUN_SOURCE_DIR "/examples/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename().string();
    Result<Scenario> s = LoadScenario(entry.path().string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Result<SimulationResult> r = Simulate(*s);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    ASSERT_EQ(r->baselines.size(), 4u);
    const PolicyResult& proportional = r->baselines[2];
    ASSERT_EQ(proportional.name, "proportional");
    EXPECT_LE(r->hetrun.steady_ratio, 1.03) << name;
    EXPECT_GE(r->hetrun.convergence_windows, 0) << name;
    EXPECT_LE(r->hetrun.convergence_windows, 4) << name;
    EXPECT_LE(r->hetrun.steady_ratio, proportional.steady_ratio * 1.005) << name;
    EXPECT_LE(10 * r->hetrun.steady_share_changes, r->hetrun.steady_windows) << name;
    ++checked;
  }
  EXPECT_GE(checked, 14);
}

// Issue 26's steady-state goal: on many ranks with noisy steps, family pooling brings the settled
// split within 1.5% of the optimum, with no more share changes than the per-rank fits made
// (4, 4 and 7) — per-rank fits alone could not: ~1.025, 1.017 and 1.0185.
TEST(SimulatorTest, ManyNoisyRanksSettleWithinOneAndAHalfPercentWithFewChanges) {
  const std::pair<const char*, int64_t> goals[] = {
      {"ranks_512_noise5.json", 4}, {"ranks_1024.json", 4}, {"noise_10pct.json", 7}};
  for (const auto& [name, changes] : goals) {
    Result<Scenario> s = LoadScenario(std::string(HETRUN_SOURCE_DIR "/examples/scenarios/") + name);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Result<SimulationResult> r = Simulate(*s);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    EXPECT_LE(r->hetrun.steady_ratio, 1.015) << name;
    EXPECT_LE(r->hetrun.share_changes, changes) << name;
    // Without pooling the same controller stays above the goal on the largest job.
    ControllerOptions own;
    own.family_pool.enabled = false;
    if (std::string(name) == "ranks_512_noise5.json") {
      Result<SimulationResult> alone = Simulate(*s, own);
      ASSERT_TRUE(alone.ok());
      EXPECT_GT(alone->hetrun.steady_ratio, 1.015);
    }
  }
}

// FSDP2's micro-batches: every rank runs the stage-wide count and pays its fixed time per
// micro-batch; the tuned split stays within 1% of the exact optimum over all splits and counts.
TEST(SimulatorTest, MicroBatchCostsTunedWithinOnePercentOfTheOptimum) {
  Result<Scenario> s =
      LoadScenario(HETRUN_SOURCE_DIR "/examples/scenarios/fsdp_micro_batches.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Result<SimulationResult> r = Simulate(*s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The split the tuner settles on (the last window's; the steady average, 1.0104, also holds
  // the windows before it settled).
  EXPECT_LE(r->hetrun.windows.back().ratio, 1.01);
  EXPECT_LE(r->hetrun.steady_ratio, 1.02);
  // The optimum counts the micro-batches: without their cost it would be lower.
  Scenario free = *s;
  for (ScenarioRank& rank : free.stages[0].ranks) rank.ms_per_micro_batch = 0;
  Result<SimulationResult> f = Simulate(free);
  ASSERT_TRUE(f.ok());
  EXPECT_GT(r->hetrun.windows.back().optimal_ms, f->hetrun.windows.back().optimal_ms + 5);
}

TEST(SimulatorTest, SpikesDisturbMeasurementsNotTheOptimumOrTheTrueTimes) {
  Scenario calm = Mix(0.03);
  calm.stages[0].ranks[0].profile = {{0, 4}, {32, 6}, {512, 518}};  // a knee on rank 0
  Scenario spiky = calm;
  spiky.spikes = {0.05, 5};
  Result<SimulationResult> a = Simulate(calm);
  Result<SimulationResult> b = Simulate(spiky);
  ASSERT_TRUE(a.ok() && b.ok());
  bool differs = false;
  for (size_t w = 0; w < a->hetrun.windows.size(); ++w) {
    EXPECT_EQ(a->hetrun.windows[w].optimal_ms, b->hetrun.windows[w].optimal_ms);
    // A static split's true iteration time is untouched by what the measurements show.
    EXPECT_EQ(a->baselines[0].windows[w].iteration_ms, b->baselines[0].windows[w].iteration_ms);
    differs = differs || a->hetrun.windows[w].shares != b->hetrun.windows[w].shares ||
              a->baselines[2].windows[w].shares != b->baselines[2].windows[w].shares;
  }
  EXPECT_TRUE(differs) << "spikes never reached a policy";
}

TEST(SimulatorTest, ProportionalChangesSharesInNoisyWindowsAndHetrunHolds) {
  Result<SimulationResult> r = Simulate(Mix(0.05));
  ASSERT_TRUE(r.ok());
  const PolicyResult& proportional = r->baselines[2];
  EXPECT_GT(proportional.share_changes, 20);
  EXPECT_LT(r->hetrun.share_changes, 6);
}

TEST(SimulatorTest, SummarizeCountsConvergenceFromEachPhase) {
  Scenario s = Mix(0);
  s.iterations = 100;
  s.events = {{50, 0, 2.0}};
  PolicyResult p;
  for (double ratio : {1.5, 1.2, 1.01, 1.0, 1.0, 1.9, 1.3, 1.0, 1.0, 1.0}) {
    p.windows.push_back({static_cast<int64_t>(p.windows.size()), {}, ratio, 1, ratio});
  }
  Summarize(s, p);
  EXPECT_EQ(p.convergence_by_phase, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(p.convergence_windows, 2);
  // Steady: windows 2..9 minus 5, 6, 7 (the event's settling windows): 1.01, 1, 1, 1, 1.
  EXPECT_NEAR(p.steady_ratio, 5.01 / 5, 1e-12);
}

TEST(RandomTest, StreamIsFixedAcrossBuilds) {
  // Recorded from an independent implementation of splitmix64 seeding + xoshiro256** + the polar
  // method (Python integers, written from the algorithms' published definitions): any change to
  // the generator, its seeding or its conversions changes every simulation and fails here.
  Random random(1);
  EXPECT_EQ(random.Next(), 0xb3f2af6d0fc710c5ULL);
  EXPECT_EQ(random.Next(), 0x853b559647364ceaULL);
  EXPECT_EQ(random.Next(), 0x92f89756082a4514ULL);
  Random uniform(42);
  EXPECT_DOUBLE_EQ(uniform.Uniform(), 0.08386297105988216);
  EXPECT_DOUBLE_EQ(uniform.Uniform(), 0.3789802506626686);
  Random normal(9);
  const double expected[] = {-0.6305639223177938, 0.39922078645911546, 0.28669230468581175,
                             0.16660150399524096};
  for (double e : expected) EXPECT_NEAR(normal.Normal(), e, 1e-15);
}

TEST(RandomTest, NormalDeviatesHaveUnitVariance) {
  Random normal(9);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < 20000; ++i) {
    double z = normal.Normal();
    sum += z;
    sum2 += z * z;
  }
  EXPECT_NEAR(sum / 20000, 0, 0.03);
  EXPECT_NEAR(sum2 / 20000, 1, 0.04);
}

}  // namespace
}  // namespace hetrun::tuner

// The tuner pools only what is alike (docs/ARCHITECTURE.md §5.2): ranks of one GPU model whose
// cards differ card to card (each rank's true line scaled by exp(spread x z), seeded) are pooled
// less as the spread grows, so the steady ratio with pooling is never worse than with each rank's
// own fit, and clearly better when the cards are alike. A small deterministic simulation (96
// ranks of three models, 5% noise); bench/pool_spread prints the 512-rank sweep.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "hetrun/tuner/random.h"
#include "hetrun/tuner/simulator.h"

namespace hetrun::tuner {
namespace {

ScenarioRank Card(const char* family, const char* model, double fixed, double per_sample) {
  ScenarioRank rank;
  rank.family = family;
  rank.model = model;
  rank.ms_fixed = fixed;
  rank.ms_per_sample = per_sample;
  return rank;
}

Scenario Spread(int64_t ranks, double spread, uint64_t seed) {
  Scenario s;
  s.global_batch = 128 * ranks;
  s.window = 10;
  s.iterations = 200;
  s.noise = 0.05;
  s.seed = seed;
  ScenarioStage stage;
  Random cards(seed * 7919 + 17);
  for (int64_t r = 0; r < ranks; ++r) {
    ScenarioRank rank = r < ranks / 2       ? Card("ampere", "a100-sxm4-80gb", 15, 1.0)
                        : r < 3 * ranks / 4 ? Card("hopper", "h100-sxm5", 12, 0.4)
                                            : Card("ada", "l40s", 14, 0.85);
    const double k = std::exp(spread * cards.Normal());
    rank.ms_fixed *= k;
    rank.ms_per_sample *= k;
    rank.max_samples = s.global_batch;
    stage.ranks.push_back(rank);
  }
  s.stages.push_back(stage);
  return s;
}

double MeanSteadyRatio(double spread, bool pool) {
  ControllerOptions options;
  options.family_pool.enabled = pool;
  double sum = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Result<SimulationResult> r = Simulate(Spread(96, spread, seed), options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    sum += r.ok() ? r->hetrun.steady_ratio : 0;
  }
  return sum / 3;
}

TEST(PoolSpreadTest, PoolingIsNeverWorseThanOwnFitsAndBetterWhenCardsAreAlike) {
  for (double spread : {0.0, 0.02, 0.05, 0.2}) {
    const double pooled = MeanSteadyRatio(spread, true);
    const double own = MeanSteadyRatio(spread, false);
    std::printf("spread %.0f%%: steady ratio pooled %.4f, own fits %.4f\n", 100 * spread, pooled,
                own);
    EXPECT_LE(pooled, own + 0.0005) << "spread " << spread;
    if (spread == 0) {
      EXPECT_LT(pooled, own - 0.003);
    }
  }
}

}  // namespace
}  // namespace hetrun::tuner

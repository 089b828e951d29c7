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
#include "spread_scenario.h"

namespace hetrun::tuner {
namespace {

double MeanSteadyRatio(double spread, bool pool) {
  ControllerOptions options;
  options.family_pool.enabled = pool;
  double sum = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Result<SimulationResult> r =
        Simulate(hetrun::testing::SpreadScenario(96, spread, seed), options);
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

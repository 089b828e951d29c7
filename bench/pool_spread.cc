// The tuner's pooling against card-to-card spread (docs/explanation/balancing.md): 512 ranks of
// three models (256 A100 SXM4, 128 H100 SXM5, 128 L40S, the shape of
// examples/scenarios/ranks_512_noise5.json), 5% step noise, each rank's true line scaled by its
// own factor exp(spread x z), z standard normal (seeded). Prints the steady ratio to the exact
// optimum with and without pooling, per spread, averaged over seeds: figures, never asserted.
// Usage: pool_spread [RANKS] [SEEDS]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hetrun/tuner/random.h"
#include "hetrun/tuner/simulator.h"
#include "spread_scenario.h"

namespace {

using hetrun::tuner::ControllerOptions;
using hetrun::tuner::Scenario;

double SteadyRatio(const Scenario& s, bool pool) {
  ControllerOptions options;
  options.family_pool.enabled = pool;
  auto r = hetrun::tuner::Simulate(s, options);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return r->hetrun.steady_ratio;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t ranks = argc > 1 ? std::atoll(argv[1]) : 512;
  const uint64_t seeds = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 3;
  std::printf("pooling vs card-to-card spread: %lld ranks, 5%% noise, %llu seeds (mean)\n",
              static_cast<long long>(ranks), static_cast<unsigned long long>(seeds));
  std::printf("| spread | steady ratio, pooled | steady ratio, own fits | pooled - own |\n");
  std::printf("|---|---|---|---|\n");
  for (double spread : {0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2}) {
    double pooled = 0, own = 0;
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      const Scenario s = hetrun::testing::SpreadScenario(ranks, spread, seed);
      pooled += SteadyRatio(s, true);
      own += SteadyRatio(s, false);
    }
    pooled /= static_cast<double>(seeds);
    own /= static_cast<double>(seeds);
    std::printf("| %.1f%% | %.4f | %.4f | %+.4f |\n", 100 * spread, pooled, own, pooled - own);
  }
  return 0;
}

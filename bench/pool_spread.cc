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

namespace {

using hetrun::tuner::ControllerOptions;
using hetrun::tuner::Scenario;
using hetrun::tuner::ScenarioRank;
using hetrun::tuner::ScenarioStage;

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
  stage.name = "dp";
  hetrun::tuner::Random cards(seed * 7919 + 17);
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
      const Scenario s = Spread(ranks, spread, seed);
      pooled += SteadyRatio(s, true);
      own += SteadyRatio(s, false);
    }
    pooled /= static_cast<double>(seeds);
    own /= static_cast<double>(seeds);
    std::printf("| %.1f%% | %.4f | %.4f | %+.4f |\n", 100 * spread, pooled, own, pooled - own);
  }
  return 0;
}

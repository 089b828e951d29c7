// A data-parallel scenario whose cards differ card to card (docs/ARCHITECTURE.md §5.2): the
// ranks of three GPU models (half A100 SXM4, a quarter H100 SXM5, a quarter L40S: the shape of
// examples/scenarios/ranks_512_noise5.json), 5% step noise, each rank's true line scaled by its
// own factor exp(spread x z), z standard normal from `seed`. Used by the pooling test
// (tests/runtime/tuner/pool_spread_test.cc) and the 512-rank sweep (bench/pool_spread.cc).
#pragma once

#include <cmath>
#include <cstdint>

#include "hetrun/tuner/random.h"
#include "hetrun/tuner/scenario.h"

namespace hetrun::testing {

inline tuner::ScenarioRank SpreadCard(const char* family, const char* model, double fixed,
                                      double per_sample) {
  tuner::ScenarioRank rank;
  rank.family = family;
  rank.model = model;
  rank.ms_fixed = fixed;
  rank.ms_per_sample = per_sample;
  return rank;
}

inline tuner::Scenario SpreadScenario(int64_t ranks, double spread, uint64_t seed) {
  tuner::Scenario s;
  s.global_batch = 128 * ranks;
  s.window = 10;
  s.iterations = 200;
  s.noise = 0.05;
  s.seed = seed;
  tuner::ScenarioStage stage;
  stage.name = "dp";
  tuner::Random cards(seed * 7919 + 17);
  for (int64_t r = 0; r < ranks; ++r) {
    tuner::ScenarioRank rank = r < ranks / 2       ? SpreadCard("ampere", "a100-sxm4-80gb", 15, 1.0)
                               : r < 3 * ranks / 4 ? SpreadCard("hopper", "h100-sxm5", 12, 0.4)
                                                   : SpreadCard("ada", "l40s", 14, 0.85);
    const double k = std::exp(spread * cards.Normal());
    rank.ms_fixed *= k;
    rank.ms_per_sample *= k;
    rank.max_samples = s.global_batch;
    stage.ranks.push_back(rank);
  }
  s.stages.push_back(stage);
  return s;
}

}  // namespace hetrun::testing

// Fuzzes the `hetrun simulate` scenario parser: any bytes give a Scenario or an error, never a
// crash, hang or escaped exception; a parsed rank's true time curve is non-decreasing up to its
// cap (a profile that is not would break the exact optimum).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hetrun/tuner/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  hetrun::Result<hetrun::tuner::Scenario> s = hetrun::tuner::ParseScenario(text);
  if (!s.ok()) return 0;
  // A parsed curve is defined everywhere the simulator reads it, and non-decreasing.
  for (const hetrun::tuner::ScenarioStage& stage : s->stages) {
    for (const hetrun::tuner::ScenarioRank& rank : stage.ranks) {
      const double at_cap = rank.TrueMs(rank.max_samples);
      if (!(rank.TrueMs(0) <= at_cap)) __builtin_trap();
      if (rank.MostSamplesWithin(at_cap, rank.max_samples) != rank.max_samples) __builtin_trap();
    }
  }
  return 0;
}

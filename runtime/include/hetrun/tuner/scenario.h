// `hetrun simulate` scenario files (JSON; format in README.md "hetrun simulate").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::tuner {

struct ScenarioRank {
  std::string family;           ///< a family of the datasheet table (DatasheetTflops)
  double ms_fixed = 0;          ///< true fixed time per iteration, ms, > 0
  double ms_per_sample = 0;     ///< true time per sample, ms, > 0
  int64_t max_samples = 0;      ///< cap per iteration (default: the global batch)
  int64_t max_micro_batch = 0;  ///< largest micro-batch that fits its memory; 0 = not given
};

struct ScenarioStage {
  std::string name;
  std::vector<ScenarioRank> ranks;
};

/// From `iteration` on, rank `rank` (global index over all stages in order) runs `slowdown`
/// times slower (both fixed and per-sample time); 1.0 recovers.
struct ScenarioEvent {
  int64_t iteration = 0;
  int64_t rank = 0;
  double slowdown = 1;
};

struct Scenario {
  int64_t global_batch = 0;  ///< samples per iteration, processed by every stage
  int64_t window = 0;        ///< iterations per tuner window
  int64_t iterations = 0;
  double noise = 0;  ///< relative std-dev of measured times (0 <= noise <= 1)
  uint64_t seed = 1;
  std::vector<ScenarioStage> stages;
  std::vector<ScenarioEvent> events;  ///< sorted by iteration (stable)

  int64_t total_ranks() const;
};

/// Parses and validates a scenario. Every error is kInvalidArgument and names the JSON path:
/// "stages[0].ranks[1].ms_per_sample: must be a number > 0, got -1". Unknown keys are errors.
/// Limits that keep a run bounded: ranks <= 65536, iterations <= 10^6, ranks * iterations
/// <= 5 * 10^7, global_batch <= 2^40.
Result<Scenario> ParseScenario(std::string_view json_text);

/// Reads FILE and parses it; an unreadable file is kNotFound naming it.
Result<Scenario> LoadScenario(const std::string& path);

/// Dense BF16 tensor TFLOP/s from NVIDIA datasheets for the datasheet baseline; kNotFound for an
/// unknown family. Families: volta, turing, ampere, ada, hopper, blackwell.
Result<double> DatasheetTflops(std::string_view family);

}  // namespace hetrun::tuner

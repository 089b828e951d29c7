// `hetrun simulate` scenario files (JSON; format in docs/reference/cli/simulate.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::tuner {

/// One point of a rank's true time curve: `ms` milliseconds for `samples` samples.
struct ProfilePoint {
  int64_t samples = 0;
  double ms = 0;
};

struct ScenarioRank {
  std::string family;        ///< a family of the datasheet table (DatasheetTflops)
  double ms_fixed = 0;       ///< true fixed time per iteration, ms, > 0 (a line; see profile)
  double ms_per_sample = 0;  ///< true time per sample, ms, > 0
  /// Instead of the line: the true time is the piecewise-linear interpolation through these
  /// points (samples strictly increasing from 0, ms > 0 and non-decreasing, at least 2 points);
  /// past the last point the last segment's slope continues. Empty for a line.
  std::vector<ProfilePoint> profile;
  int64_t max_samples = 0;      ///< cap per iteration (default: the global batch)
  int64_t max_micro_batch = 0;  ///< largest micro-batch that fits its memory; 0 = not given
  /// True fixed time of one micro-batch, ms (>= 0; needs max_micro_batch). Every rank of the
  /// stage runs the stage-wide count max_r ceil(n_r / max_micro_batch_r) (FSDP2: each
  /// micro-batch's forward all-gathers, so all ranks run as many), empty ones included, and
  /// pays ms_per_micro_batch for each on top of TrueMs.
  double ms_per_micro_batch = 0;
  /// Usable GPU memory of the rank's GPU, bytes (`memory_mib` in a file); 0 = not given. With the
  /// scenario's `memory` block it sets max_micro_batch (ApplyMemoryCeilings).
  uint64_t memory_bytes = 0;
  /// The rank's GPU model (hetrun/job/gpu_model.h): its fail-slow peers and the tuner's pool are
  /// the ranks of its model. Absent: the family's name (a scenario's ranks of one family are one
  /// model unless they say otherwise); "" is an unknown model (no peers, no pool).
  std::optional<std::string> model{};

  /// The model its peers and pool are keyed by: `model`, else the family's name.
  std::string PeerModel() const { return model ? *model : family; }

  /// The true time at n >= 0 samples (the profile, or ms_fixed + ms_per_sample * n).
  double TrueMs(int64_t n) const;
  /// The largest n >= 0 with scale * TrueMs(n) <= ms, at most `limit`; -1 when even n = 0
  /// takes longer. `scale` is a slowdown: compared as the product, never by dividing `ms`.
  /// `extra_ms` is added to every TrueMs(n) before scaling (a micro-batch count's fixed time).
  int64_t MostSamplesWithin(double ms, int64_t limit, double scale = 1, double extra_ms = 0) const;
  /// ceil(n / max_micro_batch) (1 for n = 0: an empty micro-batch still runs); 0 without
  /// max_micro_batch.
  int64_t MicroBatches(int64_t n) const;
};

/// Heavy tails on what the tuner sees: each measured step time (never the true one) is
/// multiplied by `factor` with probability `probability`, from its own seeded stream.
struct ScenarioSpikes {
  double probability = 0;  ///< in [0, 1]
  double factor = 1;       ///< >= 1
};

struct ScenarioStage {
  std::string name;
  std::vector<ScenarioRank> ranks;
};

/// From `iteration` on, rank `rank` (global index over all stages in order) runs `slowdown`
/// times slower (its whole true time curve is scaled: line or profile); 1.0 recovers.
struct ScenarioEvent {
  int64_t iteration = 0;
  int64_t rank = 0;
  double slowdown = 1;
};

/// The memory model of `hetrun simulate` (docs/how-to/memory-ceiling.md): each rank's
/// micro-batches are capped so that fixed_bytes + size x bytes_per_sample stays within its
/// ceiling: the job's (every rank's memory_bytes, smallest, minus the reserve), or with
/// `per_model` its model's (the smallest of its model's ranks, minus the reserve), as
/// `hetrun run --memory-ceiling job|model` gives the workers.
struct ScenarioMemory {
  bool given = false;
  uint64_t fixed_bytes = 0;
  uint64_t bytes_per_sample = 0;
  uint64_t reserve_bytes = uint64_t{2} << 30;
  bool per_model = false;
};

struct Scenario {
  int64_t global_batch = 0;  ///< samples per iteration, processed by every stage
  int64_t window = 0;        ///< iterations per tuner window
  int64_t iterations = 0;
  double noise = 0;  ///< relative std-dev of measured times (0 <= noise <= 1)
  uint64_t seed = 1;
  ScenarioSpikes spikes;
  std::vector<ScenarioStage> stages;
  std::vector<ScenarioEvent> events;  ///< sorted by iteration (stable)
  ScenarioMemory memory;

  int64_t total_ranks() const;
};

/// Parses and validates a scenario. Every error is kInvalidArgument and names the JSON path:
/// "stages[0].ranks[1].ms_per_sample: must be a number > 0, got -1". Unknown keys are errors.
/// Limits that keep a run bounded: ranks <= 65536, iterations <= 10^6, ranks * iterations
/// <= 5 * 10^7, global_batch <= 2^40.
Result<Scenario> ParseScenario(std::string_view json_text);

/// Sets every rank's max_micro_batch from `s.memory` with the ceiling per model (`per_model`) or
/// job-wide; kInvalidArgument naming the rank when a rank has no memory_bytes or not one sample
/// fits. A no-op without a memory block.
Status ApplyMemoryCeilings(Scenario& s, bool per_model);

/// Reads FILE and parses it; an unreadable file is kNotFound naming it.
Result<Scenario> LoadScenario(const std::string& path);

/// Dense BF16 tensor TFLOP/s from NVIDIA datasheets for the datasheet baseline; kNotFound for an
/// unknown family. Families: volta, turing, ampere, ada, hopper, blackwell.
Result<double> DatasheetTflops(std::string_view family);

}  // namespace hetrun::tuner

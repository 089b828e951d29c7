// A pipeline run's measured stage times (docs/reference/formats/measurements.md): each rank's
// trainer appends one entry per window to its MeasurementLog, which rewrites
// $HETRUN_RUN_DIR/measurements/rank_<R>.json atomically; at the end of the run the launcher
// merges the ranks' files (and node 0 every node's) into $HETRUN_RUN_DIR/measurements.json,
// which `hetrun plan --measured FILE` reads. A rank file and the merged file share one schema:
// the model (num_layers, layer_names, micro_batches) and a list of ranks with their windows.
// Measurements travel through files, never per window through the rendezvous store.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/rebalance.h"

namespace hetrun::pipeline {

/// One rank in one window.
struct WindowMeasurement {
  int64_t window = 0;                   ///< window index, from 0
  int64_t revision = 0;                 ///< the layout revision the window ran under
  int64_t first_layer = 0, layers = 0;  ///< the rank's stage's layers in that window
  int64_t samples = 0;                  ///< samples this rank processed in the window
  int64_t micro_batches = 0;            ///< micro-batches per step
  /// Per micro-batch slice (this replica's share of one micro-batch), milliseconds.
  double forward_ms = 0, backward_ms = 0;
  std::vector<double> layer_ms;  ///< optional: per layer, forward + backward per slice
  int64_t attempt = 0;           ///< the restart attempt (TORCHELASTIC_RESTART_COUNT) it ran in
};

struct RankMeasurements {
  int rank = 0, stage = 0, replica = 0;
  std::string family;
  std::vector<WindowMeasurement> windows;
};

/// The content of a rank file or of the merged file.
struct Measurements {
  int64_t num_layers = 0;
  std::vector<std::string> layer_names;  ///< empty when not known
  int64_t micro_batches = 1;
  std::vector<RankMeasurements> ranks;  ///< by rank
};

/// Most windows one rank file keeps (the oldest are dropped): bounds the file and its rewrite.
inline constexpr size_t kMaxMeasuredWindows = 1024;

/// $run_dir/measurements/rank_<rank>.json and $run_dir/measurements.json.
std::string RankMeasurementsPath(const std::string& run_dir, int rank);
std::string MergedMeasurementsPath(const std::string& run_dir);

/// The JSON of docs/reference/formats/measurements.md (ParseMeasurements reads it back unchanged).
std::string MeasurementsJson(const Measurements& measurements);

/// Parses and checks untrusted JSON: every number finite, times >= 0, counts in range, layer
/// ranges inside num_layers, layer_ms one per layer, layer_names empty or num_layers long, each
/// rank at most once. Errors (kInvalidArgument) name `source` and the JSON path
/// ("measurements.json: $.ranks[1].windows[0].forward_ms: must be a finite number >= 0").
Result<Measurements> ParseMeasurements(std::string_view json_text, std::string_view source);

/// Reads (a regular file, at most kMaxJsonInputBytes) and parses `path`.
Result<Measurements> LoadMeasurements(const std::string& path);

/// As ParseMeasurements and LoadMeasurements, but a window that fails its checks costs only that
/// window: it is left out and its error appended to `dropped` (the merge of rank files and a
/// restarted worker's log read this way). Anything else wrong still fails the whole file.
Result<Measurements> ParseMeasurementsKeepingWindows(std::string_view json_text,
                                                     std::string_view source,
                                                     std::vector<std::string>& dropped);
Result<Measurements> LoadMeasurementsKeepingWindows(const std::string& path,
                                                    std::vector<std::string>& dropped);

/// Merges `parts` (rank files, or nodes' merged files) into one, ranks in order. A part whose
/// model (num_layers, layer_names, micro_batches) differs from the first part's, or that repeats
/// a rank, is left out and named in `skipped` (one line each; `names` label the parts).
/// kInvalidArgument when no part is left.
Result<Measurements> MergeMeasurements(std::span<const Measurements> parts,
                                       std::span<const std::string> names,
                                       std::vector<std::string>& skipped);

/// The windows of a merged file as the re-balancer sees them: per attempt, window index and
/// revision where every stage of a contiguous split was measured, one StageMeasurement per stage
/// (its slowest replica: the largest forward + backward), in window order. Incomplete windows are
/// left out. `families` gets each stage's family (its replicas' names joined by "+").
std::vector<std::vector<StageMeasurement>> StageWindows(const Measurements& measurements,
                                                        std::vector<std::string>* families);

/// A rank's log: append one window, the file is rewritten (tmp + rename) each time. A restarted
/// group's worker (attempt K > 0, same run folder) continues the file its earlier attempts wrote:
/// their windows are kept, so the merged file has every attempt's.
class MeasurementLog {
 public:
  /// The log of `rank` in `layout`, restart attempt `attempt`, writing to `path` (empty: kept in
  /// memory only). When `path` holds this rank's windows of earlier attempts of the same model,
  /// stage and replica, they are kept (windows of attempt >= `attempt` are dropped); a file that
  /// cannot be read or belongs to another model, stage or replica is replaced.
  /// kInvalidArgument when the rank is not in the layout.
  static Result<MeasurementLog> Create(const JobLayout& layout, int rank, std::string path,
                                       int64_t attempt = 0);
  /// Path from HETRUN_RUN_DIR (none outside `hetrun run`: in memory only), attempt from
  /// TORCHELASTIC_RESTART_COUNT (0 when unset; kInvalidArgument naming it when not a count).
  static Result<MeasurementLog> FromEnvironment(const Environment& env, const JobLayout& layout,
                                                int rank);

  /// Appends `window` (stage, replica and family as of the layout given at creation, attempt as
  /// given at creation whatever `window.attempt` says) and writes the file. A failed write is
  /// returned once and writing stops: measurements never stop training. kInvalidArgument (nothing
  /// appended, the log goes on) for any window ParseMeasurements would refuse: a non-finite or
  /// negative time, a negative index or count, a layer range outside the model, layer_ms not one
  /// per layer.
  Status Append(const WindowMeasurement& window);

  const Measurements& measurements() const { return data_; }
  const std::string& path() const { return path_; }

 private:
  Measurements data_;
  std::string path_;
  int64_t attempt_ = 0;
};

}  // namespace hetrun::pipeline

// The end of a pipeline run's measurements (docs/reference/formats/measurements.md): the ranks'
// files in the run folder ($HETRUN_RUN_DIR/measurements/rank_<R>.json, written by each trainer's
// MeasurementLog) merged into one, which node 0 merges with every other node's part (sent once at
// the end of the run through the rendezvous, JobRendezvous::Leave) into
// $HETRUN_RUN_DIR/measurements.json, copied to --measurements-out (the run folder is removed
// when hetrun exits). A missing, unreadable or corrupt file is logged and skipped, a window the
// reader refuses is logged and dropped (the file's other windows are kept): measurements never
// change a run's outcome.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetrun/pipeline/measurements.h"

namespace hetrun::launcher {

/// The rank files under `run_dir`/measurements/ merged (ranks in order); nullopt when there are
/// none or none is usable. Every file skipped is logged with why.
std::optional<pipeline::Measurements> MergeRankFiles(const std::string& run_dir);

/// `m` as JSON of at most `max_bytes`: when larger, each rank's oldest windows are dropped
/// (halving until it fits, logged); nullopt when even one window per rank does not fit.
std::optional<std::string> MeasurementsWithin(pipeline::Measurements m, size_t max_bytes);

/// Node 0: merges its own part with the other nodes' parts (JSON texts; a part that does not
/// parse or conflicts is logged and skipped). nullopt when nothing is left.
std::optional<pipeline::Measurements> MergeNodeParts(
    const std::optional<pipeline::Measurements>& local,
    const std::vector<std::optional<std::string>>& others);

/// Writes `m` to `run_dir`/measurements.json and, when `out` is not empty, to `out` (both
/// atomically), logging the paths; a failure is logged, not returned.
void SaveMeasurements(const pipeline::Measurements& m, const std::string& run_dir,
                      const std::string& out);

}  // namespace hetrun::launcher

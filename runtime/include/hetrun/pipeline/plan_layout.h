// The job layout of one machine's pipeline run (`hetrun run --plan FILE`, docs/ARCHITECTURE.md
// §5): FILE is `hetrun plan --json` output; its stages, in order, take the local workers
// (rank = replicas of earlier stages + index).
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"

namespace hetrun::pipeline {

/// The layout of the plan `plan_json` (stages[].first_layer, .layers, .replicas (default 1),
/// .family, .shares (optional initial shares, one per replica); micro_batches; layers;
/// layer_names; schedule) for a job of `world_size` ranks. kInvalidArgument
/// naming `source` when the plan is malformed, when its stages' replicas do not add up to
/// `world_size` (both numbers named), or when the layout it gives is not valid.
Result<JobLayout> LayoutFromPlan(std::string_view plan_json, std::string_view source,
                                 int world_size);

/// Reads `path` (a regular JSON file) and calls LayoutFromPlan.
Result<JobLayout> LoadLayoutFromPlan(const std::string& path, int world_size);

}  // namespace hetrun::pipeline

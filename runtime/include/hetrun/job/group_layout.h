// Which ranks synchronise gradients with which (docs/ARCHITECTURE.md §5): the data-parallel groups
// the runtime creates sub-process-groups for, and the group the online tuner balances.
//
// From the layout file `hetrun run` writes for a pipeline (HETRUN_PLAN; it has "num_layers",
// hetrun/pipeline/job_layout.h, docs/reference/formats/layout.md): each stage's ranks, validated in
// full. An older plan form that only lists ranks per stage is still read:
//   {"stages": [{"ranks": [0, 1, 2, 3], ...}, {"ranks": [4, 5], ...}], ...}
// Every stage's replicas form one data-parallel group (they see different samples and average
// gradients); other keys are ignored. Without a plan, or with a plan whose stages carry no
// "ranks", the whole world is one data-parallel group and one stage.
#pragma once

#include <string>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

struct GroupLayout {
  /// Ranks of each stage, in stage order; together a partition of [0, world_size).
  std::vector<std::vector<int>> stages;
  /// Where the layout came from: the plan's path, or "whole world".
  std::string source;

  /// Index of the stage that holds `rank` (-1 when none).
  int StageOf(int rank) const;
};

/// The layout from HETRUN_PLAN (see above), else the whole world. Errors name the file and what
/// is wrong: a rank out of range, listed twice, or missing.
Result<GroupLayout> ReadGroupLayout(const Environment& env, int world_size);

/// The layout described by the text of a plan file (`source` names it in errors).
Result<GroupLayout> ParseGroupLayout(const std::string& json_text, const std::string& source,
                                     int world_size);

}  // namespace hetrun

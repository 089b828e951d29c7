// The plan's stage variables for one pod. `hetrun plan --emit volcano` gives a Volcano task that
// holds several pipeline stages comma lists in HETRUN_STAGE ("1,2,3,4") and HETRUN_STAGE_LAYERS
// ("4:14,18:14,..."), one entry per pod; every worker of a pod gets the entry at the pod's index
// in its task (VC_TASK_INDEX, or what the topology derived it from), so a worker always sees one
// stage: HETRUN_STAGE=3, HETRUN_STAGE_LAYERS=46:14.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

struct PodStage {
  std::map<std::string, std::string> vars;  ///< to set in every worker's environment
  int task_index = -1;                      ///< the entry taken (when vars is not empty)
};

/// The variables to set in every worker's environment: HETRUN_STAGE and HETRUN_STAGE_LAYERS
/// narrowed to entry `task_index` (the topology's; when nullopt, VC_TASK_INDEX or VK_TASK_INDEX);
/// empty when HETRUN_STAGE is unset or already one value.
/// kInvalidArgument (exit 78) naming the variable: a list without a task index, an index past
/// the list, a HETRUN_STAGE_LAYERS list of another length, or an entry that is not a stage
/// index (HETRUN_STAGE) or FIRST:COUNT (HETRUN_STAGE_LAYERS).
Result<PodStage> PodStageVariables(const Environment& env, std::optional<int> task_index);

}  // namespace hetrun::launcher

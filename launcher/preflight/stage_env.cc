#include "preflight/stage_env.h"

#include <string_view>
#include <vector>

#include "hetrun/base/units.h"

namespace hetrun::launcher {
namespace {

bool IsCount(std::string_view text) {
  Result<int64_t> value = ParseIntInRange(text, 0, int64_t{1} << 40);
  return value.ok();
}

bool IsLayerRange(std::string_view text) {
  size_t colon = text.find(':');
  return colon != std::string_view::npos && IsCount(text.substr(0, colon)) &&
         IsCount(text.substr(colon + 1));
}

}  // namespace

Result<PodStage> PodStageVariables(const Environment& env, std::optional<int> task_index) {
  PodStage pod;
  std::map<std::string, std::string>& out = pod.vars;
  std::optional<std::string> stages_text = env.Get("HETRUN_STAGE");
  if (!stages_text || stages_text->find(',') == std::string::npos) return pod;
  std::vector<std::string_view> stages = SplitOn(*stages_text, ',');
  for (std::string_view stage : stages) {
    if (!IsCount(stage)) {
      return InvalidArgumentError("HETRUN_STAGE=" + *stages_text + " (environment): entry '" +
                                  std::string(stage) + "' is not a stage index");
    }
  }
  for (const char* name : {"VC_TASK_INDEX", "VK_TASK_INDEX"}) {
    if (task_index) break;
    HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> from_env, env.GetInt(name));
    if (from_env) {
      if (*from_env < 0 || *from_env > (int64_t{1} << 30)) {
        return InvalidArgumentError(std::string(name) + "=" + std::to_string(*from_env) +
                                    " (environment): expected a pod index >= 0");
      }
      task_index = static_cast<int>(*from_env);
    }
  }
  if (!task_index) {
    return InvalidArgumentError(
        "HETRUN_STAGE=" + *stages_text +
        " (environment) lists one stage per pod of the task, but this pod's index is unknown: "
        "set VC_TASK_INDEX (Volcano's env plugin does)");
  }
  const auto index = static_cast<size_t>(*task_index);
  if (*task_index < 0 || index >= stages.size()) {
    return InvalidArgumentError("HETRUN_STAGE=" + *stages_text + " (environment) has " +
                                std::to_string(stages.size()) + " entries; this pod's task index " +
                                std::to_string(*task_index) + " is past them");
  }
  pod.task_index = *task_index;
  out["HETRUN_STAGE"] = std::string(stages[index]);
  if (std::optional<std::string> layers_text = env.Get("HETRUN_STAGE_LAYERS")) {
    std::vector<std::string_view> layers = SplitOn(*layers_text, ',');
    if (layers.size() != stages.size()) {
      return InvalidArgumentError("HETRUN_STAGE_LAYERS=" + *layers_text + " (environment) has " +
                                  std::to_string(layers.size()) + " entries, HETRUN_STAGE=" +
                                  *stages_text + " " + std::to_string(stages.size()));
    }
    if (!IsLayerRange(layers[index])) {
      return InvalidArgumentError("HETRUN_STAGE_LAYERS=" + *layers_text +
                                  " (environment): entry '" + std::string(layers[index]) +
                                  "' is not FIRST:COUNT");
    }
    out["HETRUN_STAGE_LAYERS"] = std::string(layers[index]);
  }
  return pod;
}

}  // namespace hetrun::launcher

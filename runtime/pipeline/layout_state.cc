// The layout state: reading it, choosing the start layout, rewriting it after a move
// (hetrun/pipeline/layout_state.h).
#include "hetrun/pipeline/layout_state.h"

#include <utility>
#include <vector>

#include "hetrun/base/input_file.h"

namespace hetrun::pipeline {
namespace {

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string out;
  for (int rank : ranks) out += (out.empty() ? "" : ",") + std::to_string(rank);
  return out;
}

// Why `state` is not a layout of the same job as `planned` ("" when it is).
std::string Mismatch(const JobLayout& planned, const JobLayout& state) {
  if (state.num_layers != planned.num_layers) {
    return "it has " + std::to_string(state.num_layers) + " layers, the plan " +
           std::to_string(planned.num_layers) + " (another model?)";
  }
  if (state.layer_names != planned.layer_names) {
    if (state.layer_names.empty() || planned.layer_names.empty()) {
      return state.layer_names.empty() ? "it names no layers, the plan does (another model?)"
                                       : "it names its layers, the plan does not (another model?)";
    }
    for (size_t i = 0; i < state.layer_names.size(); ++i) {
      if (state.layer_names[i] != planned.layer_names[i]) {
        return "its layer " + std::to_string(i) + " is '" + state.layer_names[i] +
               "', the plan's '" + planned.layer_names[i] + "' (another model?)";
      }
    }
  }
  if (state.stages.size() != planned.stages.size()) {
    return "it has " + std::to_string(state.stages.size()) + " stages, the plan " +
           std::to_string(planned.stages.size());
  }
  for (size_t s = 0; s < state.stages.size(); ++s) {
    if (state.stages[s].ranks != planned.stages[s].ranks) {
      return "its stage " + std::to_string(s) + " has ranks " + JoinRanks(state.stages[s].ranks) +
             ", the plan's " + JoinRanks(planned.stages[s].ranks) +
             " (another world size or other replicas)";
    }
  }
  if (state.revision <= planned.revision) {
    return "its revision " + std::to_string(state.revision) + " is not above the plan's " +
           std::to_string(planned.revision);
  }
  return "";
}

LayoutStartChoice Ignore(const JobLayout& planned, std::string_view path, const std::string& why) {
  return {planned, false,
          "ignoring the layout state " + std::string(path) + ": " + why +
              "; starting from the plan's split " + SplitText(planned)};
}

}  // namespace

Result<std::optional<std::string>> ReadLayoutStateText(const std::string& path) {
  Result<std::string> text = ReadRegularFile(path, kMaxLayoutStateBytes, "layout state");
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return text.status();
  }
  return std::optional<std::string>(std::move(*text));
}

std::string SplitText(const JobLayout& layout) {
  std::string out;
  for (const StageLayout& stage : layout.stages) {
    out += (out.empty() ? "" : ",") + std::to_string(stage.layers);
  }
  return out;
}

LayoutStartChoice ChooseStartLayout(const JobLayout& planned, std::string_view state_text,
                                    std::string_view state_path) {
  Result<JobLayout> state = ParseJobLayout(state_text, state_path);
  if (!state.ok()) return Ignore(planned, state_path, "malformed: " + state.status().message());
  if (std::string why = Mismatch(planned, *state); !why.empty()) {
    return Ignore(planned, state_path, why);
  }
  JobLayout resumed = planned;
  for (size_t s = 0; s < resumed.stages.size(); ++s) {
    resumed.stages[s].first_layer = state->stages[s].first_layer;
    resumed.stages[s].layers = state->stages[s].layers;
  }
  resumed.revision = state->revision;
  if (Status valid = ValidateJobLayout(resumed, state_path); !valid.ok()) {
    return Ignore(planned, state_path, valid.message());
  }
  std::string message = "resuming from the layout state " + std::string(state_path) +
                        ", revision " + std::to_string(resumed.revision) + ", split " +
                        SplitText(resumed) + " (the plan's was " + SplitText(planned) + ")";
  return {std::move(resumed), true, std::move(message)};
}

Status WriteMovedLayout(const JobLayout& layout, const std::string& layout_path,
                        const std::string& state_path, int rank, int local_rank) {
  if (local_rank == 0) HETRUN_RETURN_IF_ERROR(WriteJobLayoutFile(layout, layout_path));
  if (rank == 0 && !state_path.empty()) {
    HETRUN_RETURN_IF_ERROR(
        WriteJobLayoutFile(layout, state_path).WithContext("layout state (HETRUN_LAYOUT_STATE)"));
  }
  return Status::Ok();
}

}  // namespace hetrun::pipeline

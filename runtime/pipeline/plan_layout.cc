#include "hetrun/pipeline/plan_layout.h"

#include <nlohmann/json.hpp>

#include "hetrun/base/input_file.h"

namespace hetrun::pipeline {
namespace {

using nlohmann::json;

Status PlanError(std::string_view source, const std::string& what) {
  return InvalidArgumentError(std::string(source) + ": " + what);
}

// A non-negative integer member, or `fallback` when absent (-1: required).
Result<int64_t> Count(const json& object, std::string_view source, const std::string& path,
                      const char* key, int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (fallback >= 0) return fallback;
    return PlanError(source,
                     path + "." + key + " is missing (is this `hetrun plan --json` output?)");
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return PlanError(source, path + "." + key + " must be a non-negative integer");
  }
  return it->get<int64_t>();
}

Result<StageLayout> PlanStage(const json& entry, std::string_view source, size_t index,
                              int& next_rank) {
  std::string at = "$.stages[" + std::to_string(index) + "]";
  if (!entry.is_object()) return PlanError(source, at + " must be an object");
  StageLayout stage;
  HETRUN_ASSIGN_OR_RETURN(stage.first_layer, Count(entry, source, at, "first_layer", -1));
  HETRUN_ASSIGN_OR_RETURN(stage.layers, Count(entry, source, at, "layers", -1));
  HETRUN_ASSIGN_OR_RETURN(int64_t replicas, Count(entry, source, at, "replicas", 1));
  if (replicas < 1 || replicas > 4096) {
    return PlanError(source, at + ".replicas must be in [1, 4096], got " +
                                 std::to_string(replicas) + " (a stage without ranks)");
  }
  std::string family;
  if (auto it = entry.find("family"); it != entry.end() && it->is_string()) family = *it;
  for (int64_t r = 0; r < replicas; ++r) stage.ranks.push_back(next_rank++);
  stage.families.assign(stage.ranks.size(), family);
  stage.shares.assign(stage.ranks.size(), 1.0);
  if (auto it = entry.find("shares"); it != entry.end()) {  // optional: initial shares
    if (!it->is_array() || it->size() != stage.ranks.size()) {
      return PlanError(source, at + ".shares must list one number per replica (" +
                                   std::to_string(replicas) + ")");
    }
    for (size_t r = 0; r < it->size(); ++r) {
      if (!(*it)[r].is_number()) return PlanError(source, at + ".shares must hold numbers");
      stage.shares[r] = (*it)[r].get<double>();
    }
  }
  return stage;
}

// The optional revision (a layout written after live moves) and layer_costs (the model's costs).
Status PlanRevisionAndCosts(const json& root, std::string_view source, JobLayout& layout) {
  HETRUN_ASSIGN_OR_RETURN(layout.revision, Count(root, source, "$", "revision", 0));
  auto costs = root.find("layer_costs");
  if (costs == root.end()) return Status::Ok();
  if (!costs->is_array()) return PlanError(source, "$.layer_costs must be an array of numbers");
  for (size_t l = 0; l < costs->size(); ++l) {
    if (!(*costs)[l].is_number()) {
      return PlanError(source, "$.layer_costs[" + std::to_string(l) + "] must be a number");
    }
    layout.layer_costs.push_back((*costs)[l].get<double>());
  }
  return Status::Ok();
}

}  // namespace

Result<JobLayout> LayoutFromPlan(std::string_view plan_json, std::string_view source,
                                 int world_size) {
  HETRUN_RETURN_IF_ERROR(CheckJsonDepth(plan_json, kMaxJsonDepth, source));
  json root = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return PlanError(source, "not valid JSON");
  if (!root.is_object()) return PlanError(source, "the plan is not a JSON object");
  JobLayout layout;
  HETRUN_ASSIGN_OR_RETURN(layout.num_layers, Count(root, source, "$", "layers", -1));
  HETRUN_ASSIGN_OR_RETURN(layout.micro_batches, Count(root, source, "$", "micro_batches", 1));
  if (auto names = root.find("layer_names"); names != root.end() && names->is_array()) {
    for (const json& name : *names) {
      if (!name.is_string()) return PlanError(source, "$.layer_names must hold strings");
      layout.layer_names.push_back(name.get<std::string>());
    }
  }
  if (auto kind = root.find("schedule"); kind != root.end() && kind->is_string()) {
    HETRUN_ASSIGN_OR_RETURN(layout.schedule, ParseScheduleKind(kind->get<std::string>()));
  }
  HETRUN_RETURN_IF_ERROR(PlanRevisionAndCosts(root, source, layout));
  auto stages = root.find("stages");
  if (stages == root.end() || !stages->is_array()) {
    return PlanError(source, "$.stages must be an array of stages");
  }
  int next_rank = 0;
  for (size_t s = 0; s < stages->size(); ++s) {
    HETRUN_ASSIGN_OR_RETURN(StageLayout stage, PlanStage((*stages)[s], source, s, next_rank));
    layout.stages.push_back(std::move(stage));
  }
  if (next_rank != world_size) {
    return PlanError(source, "the plan's " + std::to_string(layout.stages.size()) +
                                 " stages hold " + std::to_string(next_rank) +
                                 " replicas in all, but the job has " + std::to_string(world_size) +
                                 " ranks (WORLD_SIZE)");
  }
  HETRUN_RETURN_IF_ERROR(ValidateJobLayout(layout, source));
  return layout;
}

Result<JobLayout> LoadLayoutFromPlan(const std::string& path, int world_size) {
  HETRUN_ASSIGN_OR_RETURN(std::string text,
                          ReadRegularFile(path, kMaxJsonInputBytes, "pipeline plan"));
  return LayoutFromPlan(text, path, world_size);
}

}  // namespace hetrun::pipeline

#include "hetrun/job/group_layout.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrun/pipeline/job_layout.h"

namespace hetrun {
namespace {

GroupLayout WholeWorld(int world_size) {
  GroupLayout layout;
  layout.source = "whole world";
  layout.stages.emplace_back();
  for (int r = 0; r < world_size; ++r) layout.stages.back().push_back(r);
  return layout;
}

// The layout file `hetrun run` writes (hetrun/pipeline/job_layout.h): its stages' ranks.
Result<GroupLayout> FromJobLayout(const std::string& json_text, const std::string& source,
                                  int world_size) {
  Result<pipeline::JobLayout> job = pipeline::ParseJobLayout(json_text, source);
  if (!job.ok()) return job.status();
  if (job->world_size() != world_size) {
    return InvalidArgumentError(source + ": the layout's stages hold " +
                                std::to_string(job->world_size()) +
                                " ranks, but WORLD_SIZE=" + std::to_string(world_size));
  }
  GroupLayout layout;
  layout.source = source;
  for (const pipeline::StageLayout& stage : job->stages) layout.stages.push_back(stage.ranks);
  return layout;
}

}  // namespace

int GroupLayout::StageOf(int rank) const {
  for (size_t s = 0; s < stages.size(); ++s) {
    for (int r : stages[s]) {
      if (r == rank) return static_cast<int>(s);
    }
  }
  return -1;
}

Result<GroupLayout> ParseGroupLayout(const std::string& json_text, const std::string& source,
                                     int world_size) {
  nlohmann::json root = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgumentError(source + ": not valid JSON");
  if (!root.is_object()) return InvalidArgumentError(source + ": the plan is not a JSON object");
  if (root.contains("num_layers")) return FromJobLayout(json_text, source, world_size);
  auto stages = root.find("stages");
  if (stages == root.end()) return WholeWorld(world_size);
  if (!stages->is_array()) return InvalidArgumentError(source + ": $.stages is not an array");
  GroupLayout layout;
  layout.source = source;
  std::vector<int> owner(static_cast<size_t>(world_size), -1);
  bool any_ranks = false;
  for (size_t s = 0; s < stages->size(); ++s) {
    const nlohmann::json& stage = (*stages)[s];
    std::string where = source + ": $.stages[" + std::to_string(s) + "].ranks";
    if (!stage.is_object() || !stage.contains("ranks")) {
      if (any_ranks) return InvalidArgumentError(where + " is missing (other stages list ranks)");
      continue;
    }
    if (s > 0 && !any_ranks) {
      return InvalidArgumentError(where + " is present but earlier stages list no ranks");
    }
    any_ranks = true;
    const nlohmann::json& ranks = stage["ranks"];
    if (!ranks.is_array() || ranks.empty()) {
      return InvalidArgumentError(where + " must be a non-empty array of ranks");
    }
    layout.stages.emplace_back();
    for (const nlohmann::json& value : ranks) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() >= world_size) {
        return InvalidArgumentError(where + ": " + value.dump() + " is not a rank in [0, " +
                                    std::to_string(world_size) + ")");
      }
      int rank = value.get<int>();
      if (owner[static_cast<size_t>(rank)] >= 0) {
        return InvalidArgumentError(where + ": rank " + std::to_string(rank) +
                                    " is already in stage " +
                                    std::to_string(owner[static_cast<size_t>(rank)]));
      }
      owner[static_cast<size_t>(rank)] = static_cast<int>(s);
      layout.stages.back().push_back(rank);
    }
  }
  if (!any_ranks) return WholeWorld(world_size);
  for (int r = 0; r < world_size; ++r) {
    if (owner[static_cast<size_t>(r)] < 0) {
      return InvalidArgumentError(
          source + ": rank " + std::to_string(r) +
          " is in no stage's ranks (WORLD_SIZE=" + std::to_string(world_size) + ")");
    }
  }
  return layout;
}

Result<GroupLayout> ReadGroupLayout(const Environment& env, int world_size) {
  std::optional<std::string> path = env.Get("HETRUN_PLAN");
  if (!path || path->empty()) return WholeWorld(world_size);
  std::ifstream in(*path);
  if (!in) return NotFoundError("HETRUN_PLAN=" + *path + ": cannot open the plan file");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseGroupLayout(text.str(), "HETRUN_PLAN=" + *path, world_size);
}

}  // namespace hetrun

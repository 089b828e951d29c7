// The layout file (docs/reference/formats/layout.md): reading and writing JobLayout as JSON.
#include <nlohmann/json.hpp>
#include <optional>

#include "hetrun/base/atomic_file.h"
#include "hetrun/base/input_file.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/plan/model_spec.h"

namespace hetrun::pipeline {
namespace {

using nlohmann::json;

// "source: $.stages[1].ranks: must be ..."
Status FieldError(std::string_view source, const std::string& path, const std::string& what) {
  return InvalidArgumentError(std::string(source) + ": " + path + ": " + what);
}

Result<int64_t> IntegerField(const json& object, std::string_view source, const std::string& path,
                             const char* key, std::optional<int64_t> fallback) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (fallback) return *fallback;
    return FieldError(source, path + "." + key, "is missing");
  }
  if (!it->is_number_integer()) return FieldError(source, path + "." + key, "must be an integer");
  return it->get<int64_t>();
}

// An integer field in [min, max]; the error names the bounds and the value as written.
Result<int64_t> BoundedField(const json& object, std::string_view source, const std::string& path,
                             const char* key, std::optional<int64_t> fallback, int64_t min,
                             int64_t max) {
  HETRUN_ASSIGN_OR_RETURN(int64_t value, IntegerField(object, source, path, key, fallback));
  auto it = object.find(key);
  const bool too_big = it != object.end() && it->is_number_unsigned() &&
                       it->get<uint64_t>() > static_cast<uint64_t>(max);
  if (too_big || value < min || value > max) {
    return FieldError(source, path + "." + key,
                      "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                          "], got " + it->dump());
  }
  return value;
}

// The optional per-replica lists of a stage: families ("" each) and shares (equal).
Status ParseReplicaLists(const json& entry, std::string_view source, const std::string& at,
                         StageLayout& stage) {
  stage.families.assign(stage.ranks.size(), "");
  if (auto families = entry.find("families"); families != entry.end()) {
    if (!families->is_array()) return FieldError(source, at + ".families", "must be an array");
    stage.families.clear();
    for (const json& f : *families) {
      if (!f.is_string()) return FieldError(source, at + ".families", "must hold strings");
      stage.families.push_back(f.get<std::string>());
    }
  }
  stage.shares.assign(stage.ranks.size(), 1.0);
  if (auto shares = entry.find("shares"); shares != entry.end()) {
    if (!shares->is_array()) return FieldError(source, at + ".shares", "must be an array");
    stage.shares.clear();
    for (const json& s : *shares) {
      if (!s.is_number()) return FieldError(source, at + ".shares", "must hold numbers");
      stage.shares.push_back(s.get<double>());
    }
  }
  return Status::Ok();
}

Result<StageLayout> ParseStage(const json& entry, std::string_view source, const std::string& at) {
  if (!entry.is_object()) return FieldError(source, at, "must be an object");
  StageLayout stage;
  Result<int64_t> first =
      BoundedField(entry, source, at, "first_layer", std::nullopt, 0, plan::kMaxModelLayers - 1);
  if (!first.ok()) return first.status();
  Result<int64_t> layers =
      BoundedField(entry, source, at, "layers", std::nullopt, 1, plan::kMaxModelLayers);
  if (!layers.ok()) return layers.status();
  stage.first_layer = *first;
  stage.layers = *layers;
  auto ranks = entry.find("ranks");
  if (ranks == entry.end() || !ranks->is_array()) {
    return FieldError(source, at + ".ranks", "must be an array of ranks");
  }
  for (const json& r : *ranks) {
    // Only integers in [0, kMaxLayoutRanks): 4294967296 must not wrap to rank 0.
    const bool rank = r.is_number_unsigned() ? r.get<uint64_t>() < kMaxLayoutRanks
                                             : r.is_number_integer() && r.get<int64_t>() >= 0 &&
                                                   r.get<int64_t>() < int64_t{1} << 20;
    if (!rank) return FieldError(source, at + ".ranks", r.dump() + " is no rank");
    stage.ranks.push_back(static_cast<int>(r.get<int64_t>()));
  }
  Status extras = ParseReplicaLists(entry, source, at, stage);
  if (!extras.ok()) return extras;
  return stage;
}

// The optional revision (default 0) and layer_costs (numbers; ValidateJobLayout checks the rest).
Status ParseRevisionAndCosts(const json& root, std::string_view source, JobLayout& layout) {
  Result<int64_t> revision = BoundedField(root, source, "$", "revision", 0, 0, kMaxLayoutRevision);
  if (!revision.ok()) return revision.status();
  layout.revision = *revision;
  if (auto costs = root.find("layer_costs"); costs != root.end()) {
    if (!costs->is_array()) return FieldError(source, "$.layer_costs", "must be an array");
    for (size_t l = 0; l < costs->size(); ++l) {
      if (!(*costs)[l].is_number()) {
        return FieldError(source, "$.layer_costs[" + std::to_string(l) + "]", "must be a number");
      }
      layout.layer_costs.push_back((*costs)[l].get<double>());
    }
  }
  return Status::Ok();
}

Status ParseTop(const json& root, std::string_view source, JobLayout& layout) {
  Result<int64_t> layers =
      BoundedField(root, source, "$", "num_layers", std::nullopt, 1, plan::kMaxModelLayers);
  if (!layers.ok()) return layers.status();
  layout.num_layers = *layers;
  Result<int64_t> micro = BoundedField(root, source, "$", "micro_batches", 1, 1, 1 << 20);
  if (!micro.ok()) return micro.status();
  layout.micro_batches = *micro;
  Result<int64_t> min_share =
      BoundedField(root, source, "$", "min_share", 1, 1, kMaxLayoutRevision);
  if (!min_share.ok()) return min_share.status();
  layout.min_share = *min_share;
  if (auto kind = root.find("schedule"); kind != root.end()) {
    if (!kind->is_string()) return FieldError(source, "$.schedule", "must be a string");
    Result<ScheduleKind> parsed = ParseScheduleKind(kind->get<std::string>());
    if (!parsed.ok()) return parsed.status().WithContext(std::string(source) + ": $.schedule");
    layout.schedule = *parsed;
  }
  if (auto names = root.find("layer_names"); names != root.end()) {
    if (!names->is_array()) return FieldError(source, "$.layer_names", "must be an array");
    for (const json& n : *names) {
      if (!n.is_string()) return FieldError(source, "$.layer_names", "must hold strings");
      layout.layer_names.push_back(n.get<std::string>());
    }
  }
  return ParseRevisionAndCosts(root, source, layout);
}

}  // namespace

Result<JobLayout> ParseJobLayout(std::string_view json_text, std::string_view source) {
  Status depth = CheckJsonDepth(json_text, kMaxJsonDepth, source);
  if (!depth.ok()) return depth;
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgumentError(std::string(source) + ": not valid JSON");
  if (!root.is_object()) return FieldError(source, "$", "the layout is not a JSON object");
  JobLayout layout;
  Status top = ParseTop(root, source, layout);
  if (!top.ok()) return top;
  auto stages = root.find("stages");
  if (stages == root.end() || !stages->is_array()) {
    return FieldError(source, "$.stages", "must be an array of stages");
  }
  for (size_t s = 0; s < stages->size(); ++s) {
    Result<StageLayout> stage =
        ParseStage((*stages)[s], source, "$.stages[" + std::to_string(s) + "]");
    if (!stage.ok()) return stage.status();
    layout.stages.push_back(*stage);
  }
  Status valid = ValidateJobLayout(layout, source);
  if (!valid.ok()) return valid;
  return layout;
}

Result<JobLayout> LoadJobLayout(const std::string& path) {
  Result<std::string> text = ReadRegularFile(path, kMaxJsonInputBytes, "layout file");
  if (!text.ok()) return text.status();
  return ParseJobLayout(*text, path);
}

std::string JobLayoutJson(const JobLayout& layout) {
  json root = {{"version", 1},
               {"num_layers", layout.num_layers},
               {"micro_batches", layout.micro_batches},
               {"min_share", layout.min_share},
               {"schedule", std::string(ScheduleKindName(layout.schedule))},
               {"revision", layout.revision}};
  if (!layout.layer_names.empty()) root["layer_names"] = layout.layer_names;
  if (!layout.layer_costs.empty()) root["layer_costs"] = layout.layer_costs;
  json stages = json::array();
  for (const StageLayout& stage : layout.stages) {
    stages.push_back({{"first_layer", stage.first_layer},
                      {"layers", stage.layers},
                      {"ranks", stage.ranks},
                      {"families", stage.families},
                      {"shares", stage.shares}});
  }
  root["stages"] = stages;
  return root.dump(2) + "\n";
}

Status WriteJobLayoutFile(const JobLayout& layout, const std::string& path) {
  HETRUN_RETURN_IF_ERROR(ValidateJobLayout(layout, path));
  return WriteFileAtomically(path, JobLayoutJson(layout), "layout file");
}

}  // namespace hetrun::pipeline

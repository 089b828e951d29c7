#include "hetrun/plan/layer_roles.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

namespace hetrun::plan {
namespace {

bool IsOneOf(const std::string& name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string LayerBaseName(std::string_view name) {
  size_t dot = name.rfind('.');
  if (dot != std::string_view::npos && dot + 1 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dot) + 1, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    name = name.substr(0, dot);
  }
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

bool IsEmbeddingName(const std::string& base) {
  return IsOneOf(base, {"embedding", "embeddings", "embed", "tok_embeddings"});
}

bool IsHeadName(const std::string& base) {
  return IsOneOf(base, {"head", "lm_head", "output", "output_layer", "loss"});
}

Status CheckEqualReplicas(const SplitFigures& split, std::string_view engine) {
  std::map<int64_t, std::vector<const StageFigures*>> by_replicas;
  for (const StageFigures& stage : split.stages) by_replicas[stage.slot.gpus].push_back(&stage);
  if (by_replicas.size() <= 1) return Status::Ok();
  std::string counts;
  for (const auto& [replicas, stages] : by_replicas) {
    std::string list;
    for (const StageFigures* stage : stages) {
      list += (list.empty() ? "" : ", ") + std::to_string(stage->stage) + " ('" + stage->slot.task +
              "')";
    }
    counts += (counts.empty() ? "" : "; ") + std::to_string(replicas) + " replica" +
              (replicas == 1 ? "" : "s") + " on stage" + (stages.size() == 1 ? " " : "s ") + list;
  }
  return InvalidArgumentError(std::string(engine) +
                              " needs the same data-parallel size on every pipeline stage, but "
                              "this plan has " +
                              counts +
                              ": give every stage entry of the cluster file the same gpus");
}

}  // namespace hetrun::plan

#include "hetrun/plan/links_fragment.h"

#include <nlohmann/json.hpp>

#include "json_fields.h"

namespace hetrun::plan {
namespace {

using internal::JsonPlace;

// `key` of `object`: a number of GB/s (> 0) or absent.
Result<std::optional<double>> OptionalGbPerS(const nlohmann::json& object, const JsonPlace& place,
                                             std::string_view key) {
  if (!object.contains(key)) return std::optional<double>();
  if (!object.at(std::string(key)).is_number()) {
    return place.Key(key).Error("must be a number of GB/s per direction (> 0)");
  }
  HETRUN_ASSIGN_OR_RETURN(double value, internal::RequiredNumber(object, place, key, 0, true));
  return std::optional<double>(value);
}

Result<StageLinks> ParseStage(const nlohmann::json& entry, const JsonPlace& at, size_t index) {
  HETRUN_RETURN_IF_ERROR(internal::CheckObject(entry, at, {"stage", "network", "nvlink"}));
  HETRUN_ASSIGN_OR_RETURN(
      int64_t stage, internal::IntegerOr(entry, at, "stage", static_cast<int64_t>(index), 0, 255));
  if (stage != static_cast<int64_t>(index)) {
    return at.Key("stage").Error("is " + std::to_string(stage) + ", but the entry is stage " +
                                 std::to_string(index) + " (one entry per stage, in order)");
  }
  StageLinks links;
  HETRUN_ASSIGN_OR_RETURN(links.network, OptionalGbPerS(entry, at, "network"));
  HETRUN_ASSIGN_OR_RETURN(links.nvlink, OptionalGbPerS(entry, at, "nvlink"));
  return links;
}

std::optional<Link> Measured(std::optional<double> gb_per_s) {
  if (!gb_per_s) return std::nullopt;
  Link link = LinkFromNumber(*gb_per_s);
  link.name += " measured";
  return link;
}

}  // namespace

Result<LinksFragment> ParseLinksFragment(std::string_view json_text, std::string_view source) {
  HETRUN_ASSIGN_OR_RETURN(nlohmann::json root, internal::ParseJsonText(json_text, source));
  JsonPlace place{std::string(source), "$"};
  HETRUN_RETURN_IF_ERROR(internal::CheckObject(
      root, place, {"measured_by", "world_size", "nodes", "network", "nvlink", "stages"}));
  LinksFragment fragment;
  HETRUN_ASSIGN_OR_RETURN(std::optional<std::string> by,
                          internal::OptionalString(root, place, "measured_by"));
  fragment.measured_by = by.value_or("");
  HETRUN_RETURN_IF_ERROR(internal::IntegerOr(root, place, "world_size", 1, 1, 1 << 24).status());
  HETRUN_RETURN_IF_ERROR(internal::IntegerOr(root, place, "nodes", 1, 1, 1 << 20).status());
  HETRUN_ASSIGN_OR_RETURN(fragment.network, OptionalGbPerS(root, place, "network"));
  HETRUN_ASSIGN_OR_RETURN(fragment.nvlink, OptionalGbPerS(root, place, "nvlink"));
  auto stages = root.find("stages");
  if (stages == root.end()) return fragment;
  JsonPlace at = place.Key("stages");
  if (!stages->is_array()) return at.Error("must be a list of stages");
  for (size_t i = 0; i < stages->size(); ++i) {
    HETRUN_ASSIGN_OR_RETURN(StageLinks links, ParseStage((*stages)[i], at.Index(i), i));
    fragment.stages.push_back(links);
  }
  return fragment;
}

Result<LinksFragment> LoadLinksFragment(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(std::string text, internal::ReadInputFile(path));
  return ParseLinksFragment(text, path);
}

Status ApplyLinksFragment(const LinksFragment& fragment, std::string_view source,
                          ClusterSpec* cluster) {
  if (!fragment.stages.empty() && fragment.stages.size() != cluster->stages.size()) {
    return InvalidArgumentError(
        std::string(source) + ": measured links for " + std::to_string(fragment.stages.size()) +
        " stages, but the cluster has " + std::to_string(cluster->stages.size()) +
        " (measure with the plan of this cluster: hetrun run --plan)");
  }
  for (size_t s = 0; s < cluster->stages.size(); ++s) {
    StageSlot& slot = cluster->stages[s];
    if (fragment.network) slot.network = Measured(fragment.network);
    if (fragment.nvlink) slot.nvlink = Measured(fragment.nvlink);
    if (fragment.stages.empty()) continue;
    if (fragment.stages[s].network) slot.network = Measured(fragment.stages[s].network);
    if (fragment.stages[s].nvlink) slot.nvlink = Measured(fragment.stages[s].nvlink);
  }
  return Status::Ok();
}

}  // namespace hetrun::plan

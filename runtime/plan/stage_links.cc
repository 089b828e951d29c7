#include "hetrun/plan/stage_links.h"

namespace hetrun::plan {

std::optional<Link> BoundaryLink(const StageSlot& a, const StageSlot& b) {
  if (!a.network) return b.network;
  if (!b.network) return a.network;
  return b.network->gb_per_s < a.network->gb_per_s ? b.network : a.network;
}

CollectiveLinks SummariseLinks(const std::vector<StageSlot>& stages) {
  CollectiveLinks links;
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageSlot& slot = stages[s];
    GroupLink group;
    group.stage = static_cast<int64_t>(s);
    group.replicas = slot.gpus;
    if (slot.gpus > 1) group.link = slot.nvlink;
    links.groups.push_back(group);
    links.any_given = links.any_given || slot.network || slot.nvlink;
    if (!slot.network) continue;
    if (!links.slowest || slot.network->gb_per_s < links.slowest->gb_per_s) {
      links.slowest = slot.network;
      links.slowest_stage = static_cast<int64_t>(s);
    }
    if (!links.fastest || slot.network->gb_per_s > links.fastest->gb_per_s) {
      links.fastest = slot.network;
    }
  }
  return links;
}

}  // namespace hetrun::plan

// Which link each part of a pipeline's traffic crosses (docs/reference/cli/plan.md, links): a stage
// boundary the slower network of its two pods, a stage's replicas their pod's NVLink, the job's
// collectives the slowest network of all pods.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/links.h"

namespace hetrun::plan {

/// The link between stage `a` and the next stage `b`. Every stage is its own pod, so a boundary
/// always crosses pods: the slower of the two pods' networks, the one given when only one pod
/// gives it, nullopt when neither does.
std::optional<Link> BoundaryLink(const StageSlot& a, const StageSlot& b);

/// A stage's data-parallel group: its replicas, all GPUs of its pod, reduce over its NVLink.
struct GroupLink {
  int64_t stage = 0;
  int64_t replicas = 1;
  std::optional<Link> link;  ///< the pod's nvlink; nullopt for one replica or when not given
};

/// The links a plan's collectives run at: per stage group, and job-wide (every pod takes part, so
/// the slowest pod's network sets the pace: the data-parallel pitfall of a mixed job).
struct CollectiveLinks {
  std::vector<GroupLink> groups;
  std::optional<Link> slowest;  ///< the slowest network of any pod; nullopt when none is given
  int64_t slowest_stage = -1;   ///< the first stage whose pod has it
  std::optional<Link> fastest;  ///< the fastest network of any pod
  bool any_given = false;       ///< some stage gives a network or an nvlink
};

CollectiveLinks SummariseLinks(const std::vector<StageSlot>& stages);

}  // namespace hetrun::plan

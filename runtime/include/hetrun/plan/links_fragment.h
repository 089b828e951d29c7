// Measured link speeds for a cluster file: the fragment `hetrun run --check-collectives` writes
// (docs/how-to/collective-check.md) and `hetrun plan --links FILE` applies over the cluster
// file's `network` / `nvlink` (docs/reference/cli/plan.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/plan/cluster_spec.h"

namespace hetrun::plan {

/// One stage's measured links, GB/s per direction (absent: not measured).
struct StageLinks {
  std::optional<double> network;  ///< point-to-point to the adjacent stages (the slower one)
  std::optional<double> nvlink;   ///< all-reduce bus bandwidth within the stage's replicas
};

struct LinksFragment {
  std::optional<double> network;   ///< every stage's network (no layout: the job's all-reduce)
  std::optional<double> nvlink;    ///< every stage's nvlink
  std::vector<StageLinks> stages;  ///< empty, or one entry per stage of the cluster, in order
  std::string measured_by;         ///< who wrote it ("hetrun run --check-collectives")
};

/// Parses the fragment's JSON:
///   {"measured_by": "hetrun run --check-collectives", "world_size": 4, "nodes": 1,
///    "network": 11.2, "nvlink": 150.3,
///    "stages": [{"stage": 0, "network": 11.2, "nvlink": 150.3}, {"stage": 1, "network": 11.2}]}
/// Every link is a number of GB/s per direction (> 0); `stage` must be the entry's index.
/// Errors are kInvalidArgument naming `source` and the JSON path.
Result<LinksFragment> ParseLinksFragment(std::string_view json_text, std::string_view source);

/// Reads and parses `path`.
Result<LinksFragment> LoadLinksFragment(const std::string& path);

/// The fragment over `cluster`'s links: its defaults on every stage, then its per-stage values
/// (named "<GB/s> GB/s measured"). Per-stage values need one entry per stage of the cluster
/// (after `count` is expanded); another number is an error naming both counts and `source`.
Status ApplyLinksFragment(const LinksFragment& fragment, std::string_view source,
                          ClusterSpec* cluster);

}  // namespace hetrun::plan

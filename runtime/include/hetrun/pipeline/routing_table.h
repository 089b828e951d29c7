// Which samples travel between the replicas of adjacent stages (docs/ARCHITECTURE.md §5): replica
// r of stage s sends the activations of its slice to every replica of stage s+1 whose slice
// overlaps it, exactly the overlap; the gradients of those activations travel back the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/step_slices.h"

namespace hetrun::pipeline {

/// One piece of a micro-batch crossing the boundary between stage `stage` and stage + 1.
struct Transfer {
  int stage = 0;  ///< the boundary after this stage
  int64_t micro_batch = 0;
  int from_replica = 0;  ///< replica of `stage`
  int to_replica = 0;    ///< replica of `stage` + 1
  int from_rank = 0;
  int to_rank = 0;
  SampleRange samples;  ///< global sample indices, non-empty

  bool operator==(const Transfer&) const = default;
};

struct RoutingTable {
  StepSlices step;  ///< the slices the table was built from
  /// transfers[boundary][micro_batch]: ordered by from_replica, then to_replica.
  std::vector<std::vector<std::vector<Transfer>>> transfers;

  /// What `rank` receives (forward) from the previous stage for `micro_batch`, in sample order.
  std::vector<Transfer> Incoming(const JobLayout& layout, int rank, int64_t micro_batch) const;
  /// What `rank` sends (forward) to the next stage for `micro_batch`, in sample order.
  std::vector<Transfer> Outgoing(const JobLayout& layout, int rank, int64_t micro_batch) const;
};

/// The table of a step: for every boundary and micro-batch, the non-empty overlaps of the slices
/// of the two stages' replicas.
RoutingTable BuildRoutingTable(const JobLayout& layout, const StepSlices& slices);

}  // namespace hetrun::pipeline

// Running every replica's schedule on paper (docs/ARCHITECTURE.md §5): a P2P operation completes
// once its partner has posted the matching operation (rendezvous semantics, the strictest a
// backend may have); a group completes when all its operations have. Detects deadlocks and
// unmatched operations before any process runs them, and predicts each replica's idle time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/schedule.h"

namespace hetrun::pipeline {

struct SimulationResult {
  double makespan = 0;       ///< when the last schedule finishes, with the given compute times
  std::vector<double> busy;  ///< per schedule, in the order given: time spent computing
};

/// Simulates `schedules` (one per rank, any order). A forward on stage s takes forward_time[s]
/// (1 when not given), a backward backward_time[s] (2 × the forward when not given); P2P takes no
/// time but waits for the partner. kFailedPrecondition naming the stuck ranks and their pending
/// operations when no schedule can move (a deadlock, or an operation whose partner never posts a
/// match).
Result<SimulationResult> SimulateSchedules(std::span<const Schedule> schedules,
                                           std::span<const double> forward_time = {},
                                           std::span<const double> backward_time = {});

/// Checks that for every ordered pair of ranks, the sends of one and the receives of the other
/// match one to one in order (kind, micro-batch, samples). kInvalidArgument naming the pair and
/// the first mismatch.
Status CheckPairsMatch(std::span<const Schedule> schedules);

}  // namespace hetrun::pipeline

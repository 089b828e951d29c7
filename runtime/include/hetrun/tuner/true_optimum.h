// The exact optimum of a simulated stage for ANY non-decreasing true time curves (lines or
// piecewise-linear profiles): min over integer splits of max_r t_r(n_r), caps respected.
#pragma once

#include <cstdint>
#include <span>

#include "hetrun/base/status.h"
#include "hetrun/tuner/scenario.h"

namespace hetrun::tuner {

/// One rank of the stage as the optimum sees it: its true curve plus `extra_ms` (a micro-batch
/// count's fixed time), scaled by `slowdown`; its cap.
struct TrueRank {
  const ScenarioRank* rank = nullptr;
  double slowdown = 1;
  int64_t cap = 0;
  double extra_ms = 0;
  double Ms(int64_t n) const { return slowdown * (rank->TrueMs(n) + extra_ms); }
};

/// min over splits (sum = batch, 0 <= n_r <= cap_r) of max_r Ms_r(n_r). A rank given 0 samples
/// still pays Ms_r(0). Equal to what the greedy "give the next sample to the rank whose time after
/// taking it is smallest" reaches (optimal for min-max with non-decreasing costs), computed by
/// bisection on the iteration time T over f(T) = sum_r min(cap_r, max{n : Ms_r(n) <= T}), so its
/// cost does not grow with the batch. kInvalidArgument when the caps cannot hold the batch.
Result<double> OptimalIterationMs(int64_t batch, std::span<const TrueRank> ranks);

/// The same optimum when ranks pay ms_per_micro_batch for each of the stage-wide micro-batch
/// count M = max_r ceil(n_r / max_micro_batch_r) (ScenarioRank::ms_per_micro_batch): the least
/// over M of the optimum with caps min(cap_r, M x max_micro_batch_r) and M micro-batches' fixed
/// time added to every rank. Equal to OptimalIterationMs when no rank has that cost.
Result<double> OptimalIterationMsWithMicroBatches(int64_t batch, std::span<const TrueRank> ranks);

}  // namespace hetrun::tuner

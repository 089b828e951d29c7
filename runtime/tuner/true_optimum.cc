// The exact min-max optimum over non-decreasing true curves, by bisection on the iteration time.
#include "hetrun/tuner/true_optimum.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace hetrun::tuner {
namespace {

// The most samples the ranks can take within `ms` each, saturating at `batch`.
int64_t Capacity(double ms, int64_t batch, std::span<const TrueRank> ranks) {
  int64_t total = 0;
  for (const TrueRank& r : ranks) {
    total += std::max<int64_t>(0, r.rank->MostSamplesWithin(ms, r.cap, r.slowdown, r.extra_ms));
    if (total >= batch) return batch;
  }
  return total;
}

}  // namespace

Result<double> OptimalIterationMs(int64_t batch, std::span<const TrueRank> ranks) {
  double floor_ms = 0, ceiling_ms = 0;
  int64_t room = 0;
  for (const TrueRank& r : ranks) {
    floor_ms = std::max(floor_ms, r.Ms(0));
    ceiling_ms = std::max(ceiling_ms, r.Ms(r.cap));
    room += std::min(r.cap, batch);
  }
  if (room < batch) {
    return InvalidArgumentError("optimum: the caps hold " + std::to_string(room) +
                                " samples, the batch is " + std::to_string(batch));
  }
  if (Capacity(floor_ms, batch, ranks) >= batch) return floor_ms;
  // Capacity(lo) < batch <= Capacity(hi); the optimum is the smallest T with enough capacity,
  // which is one of the values Ms_r(n): shrink [lo, hi] to adjacent doubles.
  double lo = floor_ms, hi = ceiling_ms;
  for (int i = 0; i < 2000 && std::nextafter(lo, hi) < hi; ++i) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    (Capacity(mid, batch, ranks) >= batch ? hi : lo) = mid;
  }
  // The optimum is the largest time any rank needs for its part of a split within hi.
  double worst = floor_ms;
  int64_t left = batch;
  for (const TrueRank& r : ranks) {
    int64_t n = std::min(
        left, std::max<int64_t>(0, r.rank->MostSamplesWithin(hi, r.cap, r.slowdown, r.extra_ms)));
    left -= n;
    worst = std::max(worst, r.Ms(n));
  }
  return worst;
}

Result<double> OptimalIterationMsWithMicroBatches(int64_t batch, std::span<const TrueRank> ranks) {
  bool costed = false;
  int64_t most = 0;  // the largest count any split can need: a rank's cap of the batch
  for (const TrueRank& r : ranks) {
    costed = costed || r.rank->ms_per_micro_batch > 0;
    most = std::max(most, r.rank->MicroBatches(std::min(r.cap, batch)));
  }
  if (!costed) return OptimalIterationMs(batch, ranks);
  std::optional<double> best;
  std::vector<TrueRank> at(ranks.begin(), ranks.end());
  for (int64_t m = 1; m <= most; ++m) {
    int64_t room = 0;
    for (size_t r = 0; r < at.size(); ++r) {
      const ScenarioRank& rank = *ranks[r].rank;
      at[r].cap = ranks[r].cap;
      if (rank.max_micro_batch > 0) {
        at[r].cap = std::min(at[r].cap, m * rank.max_micro_batch);
      }
      at[r].extra_ms = ranks[r].extra_ms + rank.ms_per_micro_batch * static_cast<double>(m);
      room += std::min(at[r].cap, batch);
    }
    if (room < batch) continue;  // M micro-batches cannot hold the batch
    HETRUN_ASSIGN_OR_RETURN(double ms, OptimalIterationMs(batch, at));
    if (!best || ms < *best) best = ms;
  }
  if (!best) return OptimalIterationMs(batch, ranks);  // reports the caps' shortfall
  return *best;
}

}  // namespace hetrun::tuner

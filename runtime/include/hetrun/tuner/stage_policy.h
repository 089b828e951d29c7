// How one policy of `hetrun simulate` splits one stage's batch: hetrun's controller and the
// baselines it is compared with, all fed the same measured times (simulator.h).
//
//   uniform           the even split (caps respected), never changed
//   static_datasheet  proportional to datasheet TFLOP/s, never changed
//   proportional      the throughput-proportional rule LB-BSP's paper (Chen et al., SoCC 2020)
//                     describes in words (its batch-sizing algorithm is not public): at each
//                     window boundary every rank's share is set proportional to its measured
//                     throughput over the window (share / median compute time), largest
//                     remainder, caps respected
//   lbb               LBB's online rule (Yao et al., J. Supercomputing 2024; public code, see
//                     docs in docs/reference/cli/simulate.md), acting every iteration as its code
//                     does
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/tuner/controller.h"

namespace hetrun::tuner {

class StagePolicy {
 public:
  virtual ~StagePolicy() = default;
  virtual const std::vector<int64_t>& shares() const = 0;
  /// One iteration's measured compute time of `rank` at its current share.
  virtual Status Observe(size_t rank, double measured_ms) = 0;
  /// After every rank's Observe() of an iteration; may change the split (LBB does).
  virtual Status EndIteration() { return Status::Ok(); }
  /// At a window boundary; may change the split for the next window.
  virtual Status EndWindow() = 0;
  /// The records the last EndWindow() decided on (hetrun's policy only; empty otherwise): what
  /// the fail-slow detector reads (fail_slow.h).
  virtual std::span<const RankFit> last_fits() const { return {}; }
};

/// The controller the runtime uses: one RankObserver per rank (families[r]: its pool key, 0 or
/// missing = unknown), one ShareController for the group.
std::unique_ptr<StagePolicy> MakeHetrunPolicy(ShareController group, std::vector<int64_t> caps,
                                              CostModelOptions model,
                                              std::vector<int32_t> families = {});
/// A fixed split.
std::unique_ptr<StagePolicy> MakeStaticPolicy(std::vector<int64_t> shares);
/// Throughput-proportional per window. `initial` sums to the batch; caps hold it.
std::unique_ptr<StagePolicy> MakeProportionalPolicy(std::vector<int64_t> initial,
                                                    std::vector<int64_t> caps);

/// LBB's thresholds (its LBB.py): straggle s = (max - min) / mean of the iteration's measured
/// compute times. s <= kLbbQuiet: no change; s <= kLbbResolve, or within kLbbCooldown iterations
/// of the last re-solve: one sample from the slowest rank to the fastest; otherwise a re-solve of
/// its linear model t = startup + n / throughput (throughput = n / (t - startup)).
inline constexpr double kLbbQuiet = 0.06;
inline constexpr double kLbbResolve = 0.15;
inline constexpr int64_t kLbbCooldown = 30;
/// `startup_ms[r]`: LBB's warm-up estimate of rank r's time at 0 samples (its profile fit at
/// b -> 0), fixed for the run.
std::unique_ptr<StagePolicy> MakeLbbPolicy(std::vector<int64_t> initial, std::vector<int64_t> caps,
                                           std::vector<double> startup_ms);

/// Splits `batch` proportionally to `weights` (>= 0, some > 0) within `caps` (water-filling:
/// a rank whose proportional part exceeds its cap gets the cap and the rest is re-split), then
/// rounds by largest remainder (ties to the lower rank). The caps must hold the batch.
std::vector<int64_t> ProportionalSplit(int64_t batch, std::span<const double> weights,
                                       std::span<const int64_t> caps);

}  // namespace hetrun::tuner

// Fail-slow detection relative to the GPU model (docs/ARCHITECTURE.md §5.10): a sick GPU
// (thermal throttling, a degraded link, a noisy neighbour) is slower than its own kind, while an
// A100 beside H100s, or an H100 PCIe beside H100 SXM5s (one family, two models), is slow by
// design. The "family" below is the rank's peer group: its GPU model (HETRUN_GPU_MODEL,
// hetrun/job/gpu_model.h), never the architecture. A rank of unknown model (an empty name) has
// no peers. Each window, from the same fitted lines the tuner solves with (RankFit: a + c n),
// every rank's speed is its fitted time at a common number of samples, the median share of its
// model, and is compared
//
//  - with the median of its model (never with the fastest rank of the job): ratio
//    t_r(n_f) / median over the model's ranks of t_q(n_f); a rank alone in its model has none;
//  - a rank alone in its model or of unknown model (datasheet ratios are far from measured ones),
//    with its own recent history instead: t_r(n_f) over the median of its accepted fits measured
//    near n_f (within a factor of 4: the fits are local lines) read at n_f, divided by the median
//    of that change over every rank of the group (a phase change, an evaluation, a
//    datacenter-wide throttle flags nobody). Every rank keeps a history for that median; a window
//    within the threshold joins it, a suspect one does not, so a sick rank's baseline stays
//    healthy. Within a family of two or more the family median is the comparison, so a cause
//    that hits the whole family flags nobody.
//
// A rank whose larger ratio exceeds 1 + threshold for `windows` windows in a row is fail-slow;
// it is reported once, at the window the streak reaches `windows`. The detector is fed the same
// gathered records on every rank, so every rank reaches the same verdicts. Torch-free: `hetrun
// simulate`, the C++ runtime and Python share it through WindowLoop (window_loop.h).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/tuner/solver.h"

namespace hetrun::tuner {

struct FailSlowOptions {
  double threshold = 0.15;  ///< slower by more than this fraction (> 0)
  int64_t windows = 3;      ///< for this many windows in a row (K >= 1)
  int64_t history = 8;      ///< accepted windows kept per rank for its own baseline (>= 1)
  int64_t min_history = 3;  ///< accepted windows needed before the history comparison applies
};

/// Checks ranges (threshold in (0, 10], windows in [1, 1000], 1 <= min_history <= history <= 64).
Status ValidateFailSlowOptions(const FailSlowOptions& options);

/// One rank's standing after a window.
struct FailSlowVerdict {
  /// Measured over expected at the family's median share: against the family median (0 when the
  /// rank is alone in its family or unfitted) and against its normalised history (0 = none yet).
  double family_ratio = 0;
  double history_ratio = 0;
  /// The larger of the two (1 when neither is known): hetrun_rank_slowdown_ratio.
  double ratio = 1;
  double measured_ms = 0;         ///< t_r(n_f)
  double expected_ms = 0;         ///< what the comparison behind `ratio` expected at n_f
  int64_t reference_samples = 0;  ///< n_f, the family's median share
  const char* basis = "none";     ///< "model" (its peers' median), "history" or "none"
  int64_t streak = 0;             ///< windows in a row above 1 + threshold
  bool fail_slow = false;         ///< the streak has reached K (and holds)
  bool reported = false;          ///< this window is the one the streak reached K
};

class FailSlowDetector {
 public:
  static Result<FailSlowDetector> Create(FailSlowOptions options);

  /// One window: families[r] (the rank's model; "" = unknown, no peers) and fits[r] per rank of
  /// the group (the same order every window;
  /// fits with c_ms <= 0 are unfitted and get no verdict). kInvalidArgument when the sizes differ
  /// or change between windows.
  Result<std::vector<FailSlowVerdict>> Update(std::span<const std::string> families,
                                              std::span<const RankFit> fits);

  const FailSlowOptions& options() const { return options_; }

 private:
  explicit FailSlowDetector(FailSlowOptions options) : options_(options) {}
  struct RankState {
    std::deque<RankFit> history;  // accepted fits, oldest first
    int64_t streak = 0;
  };
  void CompareWithHistory(std::span<const std::string> families, std::span<const RankFit> fits,
                          std::vector<FailSlowVerdict>& out) const;
  void Conclude(std::span<const RankFit> fits, std::vector<FailSlowVerdict>& out);

  FailSlowOptions options_;
  std::vector<RankState> ranks_;
};

}  // namespace hetrun::tuner

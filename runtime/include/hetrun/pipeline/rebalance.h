// The live re-balance decision of a pipeline (docs/ARCHITECTURE.md §5,
// docs/explanation/balancing.md): from each window's measured stage times, fit every stage's speed,
// re-plan the layer split with the exact planner (hetrun/plan/pipeline_planner.h) over the fitted
// speeds, and move layers when the new split's predicted 1F1B iteration is at least `threshold`
// shorter than the current one's. Torch-free and deterministic: every rank that feeds the same
// (all-gathered) figures gets the same decisions, so all replicas of both stages agree on a move.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::pipeline {

/// One stage in one window (its slowest replica).
struct StageMeasurement {
  int64_t first_layer = 0, layers = 0;
  /// Per micro-batch: the stage's compute for one micro-batch (all its replicas work in parallel
  /// on their shares, so this is the slowest replica's time), in milliseconds.
  double forward_ms = 0, backward_ms = 0;
  /// Optional: per layer of the stage (`layers` entries), forward + backward per micro-batch.
  std::vector<double> layer_ms;
};

/// Checks one window against the split `counts`: one entry per stage, the layer ranges of
/// `counts`, finite times >= 0 with forward + backward > 0, layer_ms empty or one finite
/// number >= 0 per layer with a positive sum. The error names the stage and the field.
Status CheckWindow(std::span<const StageMeasurement> window, std::span<const int64_t> counts);

/// Speeds and layer costs fitted from measured windows.
struct SpeedFit {
  /// Per stage, cost units per millisecond of one micro-batch (replicas included), the median
  /// over the windows (a single implausible window does not move it). Without layer times: Σ prior
  /// cost of its layers / (forward_ms + backward_ms). With layer times (scaled to add up to the
  /// stage's time): the median over its layers of prior cost / layer time, so a few layers whose
  /// prior cost is wrong do not skew it.
  std::vector<double> stage_speeds;
  /// Per layer, the median over the windows: the prior cost, or, where a window carries layer
  /// times, the stage's speed x the layer's (scaled) time.
  std::vector<double> layer_costs;
};

/// Fits speeds from `windows` (each checked with CheckWindow against its own layer ranges; all
/// with the same number of stages). `prior_costs`: one relative cost per layer (> 0 each).
/// kInvalidArgument when there are no windows or a window is malformed.
Result<SpeedFit> FitSpeeds(std::span<const double> prior_costs,
                           std::span<const std::vector<StageMeasurement>> windows);

/// The exact plan (min slowest stage, then min Σ τ) over fitted speeds, with `current` (layers
/// per stage) evaluated beside it; times in milliseconds per micro-batch, iteration by 1F1B.
Result<plan::PipelinePlan> PlanFromFit(const SpeedFit& fit, int64_t micro_batches,
                                       std::span<const int64_t> current);

/// The layout's costs as the re-balancer's prior: layer_costs when given, else 1 per layer;
/// every cost raised to at least 1e-6 × the mean, so no stage has zero cost.
std::vector<double> PriorCosts(const JobLayout& layout);

/// Layers per stage of a layout.
std::vector<int64_t> StageCounts(const JobLayout& layout);

/// "8,8,16".
std::string CountsText(std::span<const int64_t> counts);

struct RebalanceOptions {
  /// Move when the predicted iteration is at most (1 − threshold) × the current one's, both the
  /// predicted and the measured current iteration. In (0, 1).
  double threshold = 0.05;
  /// Windows after a move that are measured but not decided on (the new split is measured first).
  int64_t settle_windows = 1;
  /// Speeds are the median over the last this many windows (robust to a single outlier).
  int64_t history_windows = 8;
  /// Some move must beat the required gain this many windows in a row before one is taken (the
  /// last window's winner: it need not be the same split every window, so a winner that drifts a
  /// layer per window as the averages settle is not held back; every guard applies each window).
  int64_t confirm_windows = 2;
  /// No decision before this many windows were measured (the first speeds are the noisiest).
  int64_t min_windows = 3;
  /// A split that was left before must win by return_factor × threshold (no back and forth).
  double return_factor = 2.0;
  /// The gain must also exceed noise_margin × the speeds' standard error: the largest over the
  /// stages of (standard deviation / mean of its per-window speeds) / sqrt(windows). Noisy
  /// measurements need a larger gain; steady ones only the threshold.
  double noise_margin = 0.5;
};

/// The speeds' relative standard error over `windows` (each checked): per stage, the standard
/// deviation of its per-window speeds over their mean, divided by sqrt(windows); the largest.
/// 0 for fewer than 2 windows.
double SpeedStandardError(std::span<const double> prior_costs,
                          std::span<const std::vector<StageMeasurement>> windows);

/// Checks the options' ranges (kInvalidArgument naming the field).
Status ValidateRebalanceOptions(const RebalanceOptions& options);

struct RebalanceDecision {
  bool move = false;
  std::vector<int64_t> current_counts, new_counts;  ///< layers per stage
  /// Per-stage time per micro-batch (ms) under the fitted speeds.
  std::vector<double> predicted_current_ms, predicted_new_ms;
  double predicted_current_iteration_ms = 0, predicted_new_iteration_ms = 0;  ///< 1F1B
  /// 1F1B from the stage times measured under the current split (mean over its windows).
  double measured_current_iteration_ms = 0;
  /// The speeds' relative standard error, and the gain a move needed (threshold, x return_factor
  /// for a split left before, + noise_margin x the standard error).
  double speed_standard_error = 0, required_gain = 0;
  std::string reason;  ///< one line: why it moves or holds
};

class Rebalancer {
 public:
  static Result<Rebalancer> Create(const JobLayout& layout, RebalanceOptions options);

  /// One call per window, with the window's measurements (one per stage, in stage order).
  RebalanceDecision Decide(std::span<const StageMeasurement> window);

  /// The move `decision` was carried out: the split is now decision.new_counts.
  void Applied(const RebalanceDecision& decision);

  const std::vector<int64_t>& current_counts() const { return counts_; }
  int64_t moves() const { return moves_; }

 private:
  Rebalancer(const JobLayout& layout, RebalanceOptions options);
  RebalanceDecision Hold(RebalanceDecision decision, std::string reason);
  double MeasuredIteration() const;
  bool WasLeft(std::span<const int64_t> counts) const;
  RebalanceDecision Judge(RebalanceDecision decision);

  RebalanceOptions options_;
  int64_t micro_batches_ = 1;
  std::vector<double> prior_costs_;
  std::vector<int64_t> counts_;
  std::deque<std::vector<StageMeasurement>> history_;
  std::vector<double> measured_sum_ms_;  ///< per stage, Σ over windows under the current split
  int64_t windows_under_split_ = 0;
  int64_t moves_ = 0;
  std::vector<std::vector<int64_t>> left_splits_;
  int64_t confirm_streak_ = 0;  ///< windows in a row in which some move won
};

}  // namespace hetrun::pipeline

// `hetrun simulate`: runs the real controller (RankObserver + ShareController, the code the
// runtime uses) on simulated times, side by side with baselines (stage_policy.h) on the same
// noise and spike draws. True times are lines or piecewise-linear profiles (scenario.h); the
// optimum is exact for both (true_optimum.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/tuner/controller.h"
#include "hetrun/tuner/fail_slow.h"
#include "hetrun/tuner/micro_batch.h"
#include "hetrun/tuner/scenario.h"

namespace hetrun::tuner {

/// A window is converged when its ratio to the optimum is at most this.
inline constexpr double kConvergedRatio = 1.05;
/// Windows right after an event (its own included) left out of the steady ratio.
inline constexpr int64_t kEventSettleWindows = 3;

struct WindowRecord {
  int64_t window = 0;
  std::vector<int64_t> shares;  ///< used during the window; all ranks, stage order
  double iteration_ms = 0;      ///< mean true iteration time over the window's iterations
  double optimal_ms = 0;        ///< mean of the exact optimum's iteration time
  double ratio = 0;             ///< iteration_ms / optimal_ms
};

struct PolicyResult {
  std::string name;  ///< "hetrun", "uniform", "static_datasheet", "proportional", "lbb"
  std::vector<WindowRecord> windows;
  /// Mean ratio over the windows from the first converged one on, leaving out the
  /// kEventSettleWindows windows from each event's; all windows when none converges.
  double steady_ratio = 0;
  /// Windows until ratio <= kConvergedRatio, counted from the start and from each event's
  /// window (the largest; -1 when a phase never converges before the next one starts).
  int64_t convergence_windows = 0;
  std::vector<int64_t> convergence_by_phase;  ///< start first, then each event; -1 = never
  int64_t share_changes = 0;  ///< windows whose shares differ from the previous window's
  /// Stability: the windows steady_ratio averages from kEventSettleWindows after convergence on
  /// (the same settling allowance as after an event), and how many of them start with a split
  /// that differs from the previous window's.
  int64_t steady_windows = 0;
  int64_t steady_share_changes = 0;
};

/// A rank the fail-slow detector (fail_slow.h) reported, over hetrun's fits of each stage.
struct FailSlowReport {
  int64_t window = 0;  ///< 0-based, the window whose verdict reached K
  int64_t rank = 0;    ///< global index over all stages in order
  std::string family;
  std::string model;  ///< the rank's model ("" = unknown): what it was compared with
  FailSlowVerdict verdict;
};

struct SimulationResult {
  PolicyResult hetrun;
  std::vector<FailSlowReport> fail_slow;  ///< in window order
  std::vector<PolicyResult> baselines;    ///< uniform, static_datasheet, proportional, lbb
  /// hetrun's micro-batches for its final shares, for ranks with max_micro_batch (else size 0).
  std::vector<MicroBatchPlan> micro_batches;
};

/// Runs the scenario. Every policy sees the same noise draw per (iteration, rank). hetrun starts
/// from the uniform split (with caps) and learns everything from measured times.
Result<SimulationResult> Simulate(const Scenario& scenario, ControllerOptions options = {},
                                  FailSlowOptions fail_slow = {});

/// Fills steady_ratio, convergence_windows, convergence_by_phase and share_changes from
/// `windows` (exposed for tests).
void Summarize(const Scenario& scenario, PolicyResult& result);

}  // namespace hetrun::tuner

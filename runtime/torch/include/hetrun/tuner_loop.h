// The tuner in the training loop (ARCHITECTURE.md §5). Wraps the shared tuner::Controller (the
// same code `hetrun simulate` drives): each step feeds it the measured compute time; every W
// steps it makes ONE all-gather over the data-parallel group of every rank's window record (its
// fitted (a, c, cap, n) plus the window's figures for the log), and every rank applies the same
// gathered bytes to the same solver, so every rank gets the same next assignment with no
// broadcast. Shares change only between iterations.
//
// Per step it only appends the measurement and beats the heartbeat: no collective, no host sync,
// no log. The window boundary costs one all-gather of sizeof(RankWindow) bytes per rank and one
// solve (microseconds); WindowReport::tuner_ms is its measured wall time on this rank.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hetrun/runtime.h"
#include "hetrun/step_timer.h"
#include "hetrun/tuner/controller.h"
#include "hetrun/tuner/micro_batch.h"
#include "hetrun/tuner/solver.h"

namespace hetrun {

/// One rank's record for one window, exchanged as raw bytes (same layout on every rank).
struct RankWindow {
  /// The fitted model, cap and share as the solver reads them: with min_share m > 0, a_ms is the
  /// time at m samples and cap and n count the samples above m.
  tuner::RankFit fit;
  double compute_ms = 0;  ///< median compute time per step over the window
  double step_ms = 0;     ///< mean wall time per step (compute + data + gradient wait)
  double wait_ms = 0;     ///< mean time per step waiting for the gradient all-reduce
  double window_ms = 0;   ///< wall time of the whole window
  /// The tuner's own time on this rank: inside EndIteration() on the window's other steps
  /// (bookkeeping, heartbeat), and in the previous window's boundary (all-gather + solve; 0 for
  /// the first window). A rank that reaches the all-gather early also waits there for the
  /// others, time the next gradient all-reduce would have made it wait anyway: the boundary's
  /// cost to the job is what the LAST rank to arrive spends, the minimum over ranks.
  double bookkeeping_ms = 0;
  double last_boundary_ms = 0;
};
static_assert(sizeof(RankWindow) == 80, "RankWindow is exchanged as raw bytes");

struct WindowReport {
  int64_t window = 0;                       ///< 1-based
  std::vector<RankWindow> ranks;            ///< data-parallel group order
  std::vector<int64_t> shares_used;         ///< the split during the window
  std::vector<int64_t> shares_next;         ///< the split from the next step on
  std::optional<tuner::Decision> decision;  ///< absent when tuning is off or not yet possible
  /// This rank's wall time inside EndIteration() over the window: the per-step bookkeeping and
  /// heartbeat plus this boundary's all-gather and solve, waiting for other ranks included.
  double tuner_ms = 0;
  /// The tuner's cost to the job per window: max_r bookkeeping_ms + min_r last_boundary_ms
  /// (see RankWindow); divide by the window's wall time for the fraction of the step time.
  double overhead_ms = 0;
};

struct TunerLoopOptions {
  tuner::ControllerOptions controller;
  int64_t batch = 0;             ///< B, the group's samples per iteration
  int64_t cap = 0;               ///< most samples this rank may take (0 = batch)
  int64_t max_micro_batch = 0;   ///< largest micro-batch that fits (0 = no limit)
  bool tune = true;              ///< false: measure and report, keep the initial split
  std::vector<int64_t> initial;  ///< the first split (empty = as even as possible)
  /// Iterations at the start that no fit sees (allocator growth, lazy initialisation, caches):
  /// the first window closes after warmup + controller.window iterations. Same on every rank.
  int64_t warmup = 0;
  /// Every rank keeps at least this many samples (each initial share must be >= it and
  /// batch >= ranks * min_share). With 1, no rank idles through a whole step and every rank keeps
  /// measuring its own speed; 0 lets the solver give a rank nothing when its fixed time alone
  /// exceeds the others' iteration. Exact: the solver sees t'(n') = (a + c m) + c n' over
  /// n' = n - m samples, the same min-max problem restricted to n >= m.
  int64_t min_share = 0;
};

class TunerLoop {
 public:
  static Result<TunerLoop> Create(const Runtime& runtime, TunerLoopOptions options);

  /// This rank's samples for the coming iteration, and how to cut them into micro-batches.
  int64_t local_share() const { return controller_.local_share() + options_.min_share; }
  const std::vector<int64_t>& shares() const { return shares_; }
  tuner::MicroBatchPlan local_micro_batches() const;

  /// After each iteration: the timer's completed measurements, the step's wall time and its wait
  /// at the gradient all-reduce. Beats the heartbeat. At a window boundary, exchanges records and
  /// returns the window's report (the assignment may have changed).
  Result<std::optional<WindowReport>> EndIteration(const std::vector<StepMeasurement>& measured,
                                                   double step_ms, double wait_ms);

 private:
  TunerLoop(const Runtime& runtime, TunerLoopOptions options, tuner::Controller controller)
      : runtime_(&runtime), options_(std::move(options)), controller_(std::move(controller)) {
    UpdateShares();
  }
  void UpdateShares();

  const Runtime* runtime_;
  TunerLoopOptions options_;
  tuner::Controller controller_;
  std::vector<int64_t> shares_;  // controller_'s split plus min_share each
  int64_t iterations_ = 0;
  std::vector<double> window_compute_;
  double window_step_ms_ = 0;
  double window_wait_ms_ = 0;
  int64_t window_steps_ = 0;
  double window_overhead_ms_ = 0;  // time inside EndIteration() this window, before the boundary
  double last_boundary_ms_ = 0;    // time in the previous window's boundary
  int64_t windows_ = 0;
};

}  // namespace hetrun

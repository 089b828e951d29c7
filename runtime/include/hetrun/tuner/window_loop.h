// The tuner's per-step loop without any framework (docs/ARCHITECTURE.md §5): what a training loop
// does with its measurements between two window boundaries, and what every rank does at a boundary.
// runtime/torch's TunerLoop is a thin adapter over it (step timer + all-gather over the process
// group); a Python binding drives the same class with torch.distributed.
//
//   WindowLoop loop = *WindowLoop::Create(options, rank, ranks);
//   each iteration: train on loop.local_share() samples, measure, then
//     auto report = *loop.EndIteration(measured, {step_ms, wait_ms}, all_gather);
//   where all_gather(bytes) returns every rank's bytes concatenated in rank order.
//
// Per step it only appends the measurement: no collective. Windows close by iteration count (the
// same on every rank), not by measurements recorded: on GPU a step's events may be read one step
// later on one rank than on another. At a boundary it makes ONE all-gather of every rank's
// RankWindow (its fitted (a, c, cap, n) plus the window's figures for the log), and every rank
// applies the same gathered bytes to the same solver, so every rank gets the same next split with
// no broadcast. Shares change only between iterations.
//
// The boundary is also available in two halves, for callers that cannot block inside a callback
// (simulated ranks in one process): CloseStep() returns the record to exchange at a boundary, and
// ApplyGathered() takes the gathered bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/tuner/controller.h"
#include "hetrun/tuner/cost_model.h"
#include "hetrun/tuner/fail_slow.h"
#include "hetrun/tuner/micro_batch.h"
#include "hetrun/tuner/rank_metrics.h"
#include "hetrun/tuner/solver.h"

namespace hetrun::tuner {

/// One rank's record for one window, exchanged as raw bytes (same layout on every rank).
struct RankWindow {
  /// The fitted model, cap and share as the solver reads them: with min_share m > 0, a_ms is the
  /// time at m samples and cap and n count the samples above m.
  RankFit fit;
  double compute_ms = 0;  ///< median compute time per step over the window
  double step_ms = 0;     ///< mean wall time per step (compute + data + gradient wait)
  double wait_ms = 0;     ///< mean time per step waiting for the gradient all-reduce
  double window_ms = 0;   ///< wall time of the whole window
  /// The tuner's own time on this rank: inside EndIteration() on the window's other steps
  /// (bookkeeping, the caller's per-step hook such as a heartbeat), and in the previous window's
  /// boundary (all-gather + solve; 0 for the first window). A rank that reaches the all-gather
  /// early also waits there for the others, time the next gradient all-reduce would have made it
  /// wait anyway: the boundary's cost to the job is what the LAST rank to arrive spends, the
  /// minimum over ranks.
  double bookkeeping_ms = 0;
  double last_boundary_ms = 0;
  /// The rank's GPU model (HETRUN_GPU_MODEL, NUL-padded; empty when unknown): the fail-slow
  /// detector compares each rank with its model's peers (fail_slow.h).
  char model[16] = {};
};
static_assert(sizeof(RankWindow) == 112, "RankWindow is exchanged as raw bytes");

struct WindowReport {
  int64_t window = 0;                ///< 1-based
  std::vector<RankWindow> ranks;     ///< data-parallel group order
  std::vector<int64_t> shares_used;  ///< the split during the window
  std::vector<int64_t> shares_next;  ///< the split from the next step on
  std::optional<Decision> decision;  ///< absent when tuning is off or not yet possible
  /// This rank's wall time inside EndIteration() over the window: the per-step bookkeeping and
  /// hooks plus this boundary's all-gather and solve, waiting for other ranks included.
  double tuner_ms = 0;
  /// The tuner's cost to the job per window: max_r bookkeeping_ms + min_r last_boundary_ms
  /// (see RankWindow); divide by the window's wall time for the fraction of the step time.
  double overhead_ms = 0;
  /// overhead_ms / (the window's wall time on rank 0 + overhead_ms).
  double overhead_fraction() const;

  /// Against the ideal, with the same fitting whether or not the loop tunes (a --no-tune run
  /// fits too, it just does not act). Compute only: the all-reduce, optimizer and data loading
  /// are left out of both, no split changes them.
  /// optimal_compute_ms: the exact min-max split's compute time under the ranks' fits (the
  /// solver's optimum); 0 while some rank has no fit yet.
  double optimal_compute_ms = 0;
  /// achieved_compute_ms: the slowest rank's median compute time at its share this window.
  double achieved_compute_ms = 0;
  /// efficiency = optimal_compute_ms / achieved_compute_ms (0 = unknown).
  double efficiency = 0;
  /// samples_per_s = batch / the slowest rank's mean step; ideal_samples_per_s = batch /
  /// (optimal_compute_ms + the measured rest of the step, that step minus achieved_compute_ms).
  double samples_per_s = 0;
  double ideal_samples_per_s = 0;
  /// Every rank's fail-slow standing after this window (fail_slow.h), group order; the same on
  /// every rank.
  std::vector<FailSlowVerdict> health;
};

struct WindowLoopOptions {
  ControllerOptions controller;
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
  /// This rank's GPU model (h100-sxm5, a100-sxm4-80gb, ...; hetrun/job/gpu_model.h): ranks of
  /// one model pool their fits (family_pool.h) and are each other's fail-slow peers. Empty:
  /// HETRUN_GPU_MODEL of the process; unset there too: unknown (not pooled, judged by its own
  /// history). The family (HETRUN_GPU_FAMILY) is never the key: one family mixes models.
  std::string model;
  /// Fail-slow detection over the gathered records (fail_slow.h). A rank reported fail-slow logs
  /// it (outside `hetrun run`) or leaves its report in $HETRUN_RUN_DIR/fail_slow/rank_<RANK>
  /// for the launcher (--fail-slow, docs/ARCHITECTURE.md §5.10).
  FailSlowOptions fail_slow;
};

/// One step's wall-clock figures, as the caller measured them.
struct StepTimes {
  double step_ms = 0;  ///< the step's wall time
  double wait_ms = 0;  ///< its wait at the gradient all-reduce
  /// Time the caller spent on the tuner's behalf this step outside EndIteration() (for example a
  /// heartbeat), counted in the tuner's overhead.
  double hook_ms = 0;
};

/// Every rank's bytes, concatenated in rank order; each rank passes the same number of bytes.
using AllGatherFn = std::function<Result<std::vector<std::byte>>(std::span<const std::byte> mine)>;

class WindowLoop {
 public:
  /// `rank` in [0, ranks). Bad options: kInvalidArgument naming the option.
  static Result<WindowLoop> Create(WindowLoopOptions options, int rank, int ranks);

  /// This rank's samples for the coming iteration, and how to cut them into micro-batches.
  int64_t local_share() const { return controller_.local_share() + options_.min_share; }
  const std::vector<int64_t>& shares() const { return shares_; }
  MicroBatchPlan local_micro_batches() const;
  const WindowLoopOptions& options() const { return options_; }
  int rank() const { return rank_; }

  /// After each iteration: the completed measurements (samples, compute_ms; a compute time <= 0
  /// means "no compute region" and is skipped) and the step's times. At a window boundary,
  /// exchanges records through `all_gather` and returns the window's report.
  Result<std::optional<WindowReport>> EndIteration(std::span<const Observation> measured,
                                                   const StepTimes& times,
                                                   const AllGatherFn& all_gather);

  /// The first half of EndIteration(): records the step; at a window boundary returns this
  /// rank's record, which the caller must gather and pass to ApplyGathered() before the next step.
  Result<std::optional<RankWindow>> CloseStep(std::span<const Observation> measured,
                                              const StepTimes& times);
  /// The second half: every rank's records in rank order (ranks * sizeof(RankWindow) bytes).
  Result<WindowReport> ApplyGathered(std::span<const std::byte> gathered);

 private:
  WindowLoop(WindowLoopOptions options, int rank, Controller controller, FailSlowDetector health)
      : options_(std::move(options)),
        rank_(rank),
        controller_(std::move(controller)),
        health_(std::move(health)) {
    UpdateShares();
  }
  void UpdateShares();
  Status CheckHealth(WindowReport& report);
  void MeasureAgainstIdeal(WindowReport& report) const;

  WindowLoopOptions options_;
  int rank_;
  Controller controller_;
  std::vector<int64_t> shares_;  // controller_'s split plus min_share each
  int64_t iterations_ = 0;
  std::vector<double> window_compute_;
  double window_step_ms_ = 0;
  double window_wait_ms_ = 0;
  int64_t window_steps_ = 0;
  double window_overhead_ms_ = 0;  // time inside EndIteration() this window, before the boundary
  double last_boundary_ms_ = 0;    // time in the previous window's boundary
  int64_t windows_ = 0;
  int64_t share_changes_ = 0;  // windows after which the split changed
  RankMetricsWriter metrics_;  // this rank's figures for hetrun run --metrics-port
  FailSlowDetector health_;
  char model_[16] = {};         // this rank's HETRUN_GPU_MODEL, for its records
  std::string fail_slow_path_;  // where a fail-slow report goes under hetrun run ("" = log it)
  // Between CloseStep() returning a record and ApplyGathered(): when the boundary's step began
  // (its hook time included) and when the exchange began.
  bool awaiting_gather_ = false;
  std::chrono::steady_clock::time_point step_begin_;
  std::chrono::steady_clock::time_point boundary_begin_;
  double step_hook_ms_ = 0;
};

}  // namespace hetrun::tuner

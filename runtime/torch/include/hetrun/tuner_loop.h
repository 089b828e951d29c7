// The tuner in the training loop (docs/ARCHITECTURE.md §5), for libtorch trainers: a thin adapter
// over the framework-free tuner::WindowLoop (hetrun/tuner/window_loop.h, which holds the windows,
// warm-up, min_share, the record exchange and the report). This file adds what needs libtorch:
// the step timer's measurements, the heartbeat, and the all-gather over the data-parallel group.
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
#include "hetrun/tuner/micro_batch.h"
#include "hetrun/tuner/window_loop.h"

namespace hetrun {

using RankWindow = tuner::RankWindow;
using WindowReport = tuner::WindowReport;
using TunerLoopOptions = tuner::WindowLoopOptions;

class TunerLoop {
 public:
  static Result<TunerLoop> Create(const Runtime& runtime, TunerLoopOptions options);

  /// This rank's samples for the coming iteration, and how to cut them into micro-batches.
  int64_t local_share() const { return loop_.local_share(); }
  const std::vector<int64_t>& shares() const { return loop_.shares(); }
  tuner::MicroBatchPlan local_micro_batches() const { return loop_.local_micro_batches(); }

  /// After each iteration: the timer's completed measurements, the step's wall time and its wait
  /// at the gradient all-reduce. Beats the heartbeat. At a window boundary, exchanges records and
  /// returns the window's report (the assignment may have changed).
  Result<std::optional<WindowReport>> EndIteration(const std::vector<StepMeasurement>& measured,
                                                   double step_ms, double wait_ms);

 private:
  TunerLoop(const Runtime& runtime, tuner::WindowLoop loop)
      : runtime_(&runtime), loop_(std::move(loop)) {}

  const Runtime* runtime_;
  tuner::WindowLoop loop_;
};

}  // namespace hetrun

// What the pipeline trainer measures per window and how every rank learns every stage's figures
// (pipeline_mode.h): one all-gather over the world per window carries each rank's tuned share
// (for routing) and its compute per micro-batch slice (for the re-balance decision), so every
// rank feeds the same figures to the same decision.
#pragma once

#include <hetrun/pipeline/measurements.h>
#include <hetrun/pipeline/rebalance.h>
#include <hetrun/pipeline_executor.h>
#include <hetrun/runtime.h>

#include <vector>

#include "stage_run.h"

/// This rank's compute in the running window.
struct WindowSums {
  double forward_ms = 0, backward_ms = 0, step_ms = 0;
  int64_t steps = 0, samples = 0;
  void Add(const hetrun::PipelineStepFigures& f, int64_t step_samples) {
    samples += step_samples;
    forward_ms += f.forward_ms;
    backward_ms += f.backward_ms;
    step_ms += f.step_ms;
    ++steps;
  }
};

/// Every stage's figures in one window, the same on every rank.
struct WindowFigures {
  std::vector<std::vector<double>> shares;  ///< per stage, per replica: samples of the step
  /// Per stage, its slowest replica: forward and backward ms per micro-batch slice, and per layer
  /// forward + backward ms (each layer's measured forward share of the stage's compute; empty
  /// on a GPU, where layers are not timed one by one).
  std::vector<hetrun::pipeline::StageMeasurement> stages;
  std::vector<double> replica_ms;  ///< per rank: forward + backward ms per micro-batch slice
  double step_ms = 0;              ///< the slowest rank's mean step in the window
  /// This rank's figures for its MeasurementLog (window index and revision left to the caller).
  hetrun::pipeline::WindowMeasurement mine;
};

/// The all-gather at a window boundary (every rank calls it at the same step). `share`: this
/// rank's samples per step from now on (its stage's tuner). Resets `sums` and the layer clock.
hetrun::Result<WindowFigures> GatherWindow(hetrun::Runtime& rt, StageRun& run, double share,
                                           WindowSums& sums);

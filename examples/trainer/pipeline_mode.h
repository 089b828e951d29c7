// The trainer as one stage of a pipeline (HETRUN_PLAN set by `hetrun run --plan`), and the same
// model trained whole in one process (--reference) for comparison: same data, same initial
// weights, AdamW, every step's loss in --summary's `losses`.
#pragma once

#include <hetrun/base/env.h>
#include <hetrun/tuner_loop.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tiny_gpt.h"

/// --force-split STEP:N,N,...: after step `step`, move to `counts` layers per stage.
struct ForcedSplit {
  int64_t step = 0;
  std::vector<int64_t> counts;
};

struct PipelineFlags {
  int64_t steps = 4;
  int64_t batch = 24;
  double lr = 3e-3;
  TinyGptConfig model;
  std::string summary;   ///< key=value figures (rank 0), with `losses`
  bool float64 = false;  ///< --double: parameters and activations in float64
  /// The per-stage tuner: each stage's replicas' shares of every micro-batch, from their measured
  /// compute (one all-gather per window in the stage's group, then one across the world so every
  /// rank routes with every stage's shares). Off: the plan's shares throughout.
  bool tune = true;
  hetrun::TunerLoopOptions tuning;
  std::string save_params;  ///< a folder: one <layer name>.txt per layer (its stage's replica 0)
  /// Live layer moves (docs/how-to/cpp-pipelines.md): at each window boundary, every rank decides
  /// from the all-gathered stage times whether moving boundary layers shortens the iteration by
  /// at least `rebalance_threshold`; a move sends the layers' parameters and AdamW state to their
  /// new stage and rewrites the layout file (revision + 1).
  bool rebalance = true;
  double rebalance_threshold = 0.05;
  std::vector<ForcedSplit> forced_splits;  ///< moves regardless of the measurements (tests)
};

/// Trains this rank's stage of the layout in HETRUN_PLAN; returns the process exit code (78 when
/// the plan does not match the model, naming both).
int RunPipelineStage(const PipelineFlags& flags, const hetrun::Environment& env);

/// Trains the whole model in this process (no runtime); returns the exit code.
int RunReference(const PipelineFlags& flags);

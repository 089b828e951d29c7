// This rank's stage of the pipeline as it trains now (pipeline_mode.h): its layer range, the
// AdamW over those layers and the executor. A live layer move (MoveStage) sends the layers that
// change stage with their AdamW state (hetrun/layer_mover.h, hetrun/adam_state.h) and rebuilds
// all three; layers that stay keep their state, so training continues exactly.
#pragma once

#include <hetrun/layer_mover.h>
#include <hetrun/pipeline/job_layout.h>
#include <hetrun/pipeline_executor.h>
#include <hetrun/runtime.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <vector>

#include "pipeline_mode.h"
#include "tiny_gpt.h"

/// Per model layer, the forward ms this rank measured since the last Reset (CPU only: on a GPU
/// timing each layer would need a sync per layer, so nothing is recorded there).
struct LayerClock {
  std::vector<double> forward_ms;
  bool enabled = false;
  void Reset() { std::fill(forward_ms.begin(), forward_ms.end(), 0.0); }
};

struct StageRun {
  hetrun::pipeline::JobLayout layout;
  int64_t first = 0, count = 0;  ///< this rank's layers [first, first + count)
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<hetrun::PipelineExecutor> exec;
  std::shared_ptr<LayerClock> clock;
};

/// The layers per stage of `layout`.
std::vector<int64_t> SplitOf(const hetrun::pipeline::JobLayout& layout);

/// `layout` with `counts` layers per stage (revision + 1); kInvalidArgument naming both when
/// the counts do not fit its stages and layers.
hetrun::Result<hetrun::pipeline::JobLayout> WithSplit(const hetrun::pipeline::JobLayout& layout,
                                                      const std::vector<int64_t>& counts);

/// The stage of `layout` that holds this rank, trained from the whole `model` (which every rank
/// builds with the same initial weights) with a fresh AdamW.
hetrun::Result<StageRun> BuildStageRun(hetrun::Runtime& rt, TinyGpt model,
                                       const PipelineFlags& flags,
                                       hetrun::pipeline::JobLayout layout);

struct MoveFigures {
  hetrun::LayerMoveReport report;
  double pause_ms = 0;  ///< transfer + rebuild on this rank, wall time
};

/// Moves to `counts` layers per stage (every rank calls it at the same step): the transfer, then
/// the new optimizer (kept state for layers that stay, received state for new ones) and
/// executor. `run` is the new stage afterwards.
hetrun::Result<MoveFigures> MoveStage(hetrun::Runtime& rt, TinyGpt model,
                                      const PipelineFlags& flags, StageRun& run,
                                      const std::vector<int64_t>& counts);

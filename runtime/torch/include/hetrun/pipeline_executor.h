// Runs this rank's part of a pipeline step (docs/ARCHITECTURE.md §5): the schedule of the torch-
// free core (hetrun/pipeline/schedule.h) executed with the world backend's point-to-point
// operations (each group of the schedule posted together, then waited for), forward and backward
// per micro-batch, and the stage's gradients all-reduced among the stage's replicas only. The
// last stage scales each per-sample loss by 1/B (B = the global batch), so the summed gradients
// equal one process's mean-loss gradient on the whole batch for any split (exact_gradients.h).
//
//   hetrun::PipelineStage stage{forward, input_shape, params};
//   auto exec = hetrun::PipelineExecutor::Create(*rt, layout, stage, batch);
//   for (step...) { optimizer.zero_grad(); auto figures = exec->Step(); optimizer.step(); }
#pragma once

#include <torch/types.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/routing_table.h"
#include "hetrun/pipeline/schedule.h"
#include "hetrun/runtime.h"

namespace hetrun {

/// What a trainer gives the executor for its stage's layers.
struct PipelineStage {
  /// Forward of the stage's layers on the global samples `samples` of step `step`. `input` is the
  /// previous stage's activations for those samples (undefined on the first stage, which reads
  /// its own data). Returns the activations (every stage but the last) or the per-sample losses
  /// [n] (the last stage, which reads its own targets).
  std::function<torch::Tensor(const torch::Tensor& input, int64_t step,
                              const pipeline::SampleRange& samples)>
      forward;
  /// Shape and type of the activations this stage receives for n samples (stages after the
  /// first).
  std::function<std::vector<int64_t>(int64_t n)> input_shape;
  torch::ScalarType input_dtype = torch::kFloat32;
  /// The stage's parameters, whose gradients are all-reduced among its replicas.
  std::vector<torch::Tensor> parameters;
};

/// One step's figures on this rank.
struct PipelineStepFigures {
  double loss = 0;         ///< the global batch's mean loss (on every rank)
  double forward_ms = 0;   ///< this rank's forward compute, all micro-batches (emulated
                           ///< slowdown included)
  double backward_ms = 0;  ///< this rank's backward compute
  double wait_ms = 0;      ///< waiting for sends and receives to complete
  double reduce_ms = 0;    ///< the stage's gradient all-reduce and the loss all-reduce
  double step_ms = 0;      ///< the whole step
};

class PipelineExecutor {
 public:
  /// kInvalidArgument when the layout does not hold this rank, or the batch cannot be cut into
  /// the layout's micro-batches and slices (the message names the stage and the sizes).
  static Result<std::unique_ptr<PipelineExecutor>> Create(Runtime& runtime,
                                                          const pipeline::JobLayout& layout,
                                                          PipelineStage stage, int64_t batch);

  /// Runs the schedule of step `step` and all-reduces the stage's gradients (the caller zeroes
  /// them before and runs its optimizer after). `shares` (per stage, per replica) replace the
  /// current shares when given. kUnavailable when a peer fails mid-schedule (c10d's error,
  /// named), never a hang past the runtime's timeout.
  Result<PipelineStepFigures> Step(int64_t step, std::span<const std::vector<double>> shares = {});

  const pipeline::Schedule& schedule() const { return schedule_; }
  /// This rank's samples per step under the current shares (Σ of its micro-batch slices).
  int64_t samples() const;
  const pipeline::JobLayout& layout() const { return layout_; }
  int stage() const { return schedule_.stage; }
  bool last_stage() const { return schedule_.stage + 1 == static_cast<int>(layout_.stages.size()); }

 private:
  PipelineExecutor(Runtime& runtime, pipeline::JobLayout layout, PipelineStage stage, int64_t batch)
      : runtime_(runtime), layout_(std::move(layout)), stage_(std::move(stage)), batch_(batch) {}
  Status Plan(std::span<const std::vector<double>> shares);
  Status RunSchedule(int64_t step, PipelineStepFigures& figures);
  Status Communicate(const pipeline::ScheduleStep& group);
  Status Forward(const pipeline::Op& op, int64_t step);
  Status Backward(const pipeline::Op& op);

  Runtime& runtime_;
  pipeline::JobLayout layout_;
  PipelineStage stage_;
  int64_t batch_ = 0;
  pipeline::RoutingTable routes_;
  pipeline::Schedule schedule_;
  // Per micro-batch of the running step.
  std::vector<std::vector<torch::Tensor>> received_;  ///< activation pieces, sample order
  std::vector<std::vector<torch::Tensor>> grads_in_;  ///< gradient pieces from the next stage
  std::vector<torch::Tensor> inputs_, outputs_;
  torch::Tensor loss_sum_;
};

}  // namespace hetrun

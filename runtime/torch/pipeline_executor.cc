#include "hetrun/pipeline_executor.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include "hetrun/exact_gradients.h"
#include "hetrun/pipeline/step_slices.h"

namespace hetrun {
namespace {

using pipeline::Op;
using pipeline::OpKind;

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// One Gloo/NCCL tag per (micro-batch, direction): a pair's operations match by tag and order.
int Tag(const Op& op) {
  bool gradient = op.kind == OpKind::kSendGradient || op.kind == OpKind::kRecvGradient;
  return static_cast<int>(op.micro_batch * 2 + (gradient ? 1 : 0));
}

// HETRUN_EMULATE_SLOWDOWN on CPU: stretch a compute that took `real` to real × slowdown by
// sleeping the difference (the timings stay real elapsed time, as StepTimer's do).
void Stretch(std::chrono::steady_clock::time_point start, double slowdown) {
  if (slowdown <= 1.0) return;
  auto real = std::chrono::steady_clock::now() - start;
  std::this_thread::sleep_for(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double, std::nano>(
          static_cast<double>(std::chrono::nanoseconds(real).count()) * (slowdown - 1.0))));
}

}  // namespace

Result<std::unique_ptr<PipelineExecutor>> PipelineExecutor::Create(
    Runtime& runtime, const pipeline::JobLayout& layout, PipelineStage stage, int64_t batch) {
  HETRUN_RETURN_IF_ERROR(pipeline::ValidateJobLayout(layout, "pipeline layout"));
  if (layout.world_size() != runtime.world_size() || layout.StageOf(runtime.rank()) < 0) {
    return InvalidArgumentError(
        "the pipeline layout holds " + std::to_string(layout.world_size()) +
        " ranks, but this job has WORLD_SIZE=" + std::to_string(runtime.world_size()));
  }
  if (!stage.forward || stage.parameters.empty()) {
    return InvalidArgumentError("a pipeline stage needs a forward function and parameters");
  }
  std::unique_ptr<PipelineExecutor> exec(
      new PipelineExecutor(runtime, layout, std::move(stage), batch));
  HETRUN_RETURN_IF_ERROR(exec->Plan({}));
  if (exec->schedule_.stage > 0 && !exec->stage_.input_shape) {
    return InvalidArgumentError("stage " + std::to_string(exec->schedule_.stage) +
                                " receives activations but has no input_shape");
  }
  return exec;
}

int64_t PipelineExecutor::samples() const {
  int64_t total = 0;
  for (size_t m = 0; m < routes_.step.micro_batches.size(); ++m) {
    total += routes_.step.Slice(schedule_.stage, static_cast<int64_t>(m), schedule_.replica).size();
  }
  return total;
}

Status PipelineExecutor::Plan(std::span<const std::vector<double>> shares) {
  HETRUN_ASSIGN_OR_RETURN(pipeline::StepSlices slices,
                          pipeline::SliceStep(layout_, batch_, shares));
  routes_ = pipeline::BuildRoutingTable(layout_, slices);
  schedule_ = pipeline::BuildSchedule(layout_, routes_, runtime_.rank());
  return Status::Ok();
}

Status PipelineExecutor::Communicate(const pipeline::ScheduleStep& group) {
  c10d::Backend& world = runtime_.world();
  // NCCL runs a group's sends and receives as one fused launch (ncclGroupStart/End), so a pair
  // that sends to each other cannot block on stream order; Gloo's are asynchronous already.
  const bool coalesce = runtime_.backend_name() == "nccl";
  if (coalesce) world.startCoalescing();
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::vector<std::vector<torch::Tensor>> buffers;
  buffers.reserve(group.ops.size());
  for (const Op& op : group.ops) {
    const auto mb = static_cast<size_t>(op.micro_batch);
    const pipeline::SampleRange& slice =
        routes_.step.Slice(schedule_.stage, op.micro_batch, schedule_.replica);
    const int64_t offset = op.samples.begin - slice.begin;
    torch::Tensor tensor;
    if (op.kind == OpKind::kRecvActivation) {
      tensor = torch::empty(stage_.input_shape(op.samples.size()),
                            torch::TensorOptions(runtime_.device()).dtype(stage_.input_dtype));
      received_[mb].push_back(tensor);
    } else if (op.kind == OpKind::kRecvGradient) {
      std::vector<int64_t> shape = outputs_[mb].sizes().vec();
      shape[0] = op.samples.size();
      tensor = torch::empty(shape, outputs_[mb].options());
      grads_in_[mb].push_back(tensor);
    } else if (op.kind == OpKind::kSendActivation) {
      tensor = outputs_[mb].detach().narrow(0, offset, op.samples.size()).contiguous();
    } else {
      tensor = inputs_[mb].grad().narrow(0, offset, op.samples.size()).contiguous();
    }
    buffers.push_back({tensor});
    bool send = op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient;
    works.push_back(send ? world.send(buffers.back(), op.peer, Tag(op))
                         : world.recv(buffers.back(), op.peer, Tag(op)));
  }
  if (coalesce) {
    c10::intrusive_ptr<c10d::Work> group_work = world.endCoalescing();
    works.push_back(group_work);
  }
  for (size_t i = 0; i < works.size(); ++i) {
    try {
      if (works[i]) works[i]->wait();
    } catch (const std::exception& e) {
      return UnavailableError("pipeline " +
                              group.ops[std::min(i, group.ops.size() - 1)].ToString() +
                              " on rank " + std::to_string(runtime_.rank()) + ": " + e.what());
    }
  }
  return Status::Ok();
}

Status PipelineExecutor::Forward(const Op& op, int64_t step) {
  const auto mb = static_cast<size_t>(op.micro_batch);
  torch::Tensor input;
  if (schedule_.stage > 0) {
    input = torch::cat(received_[mb]).requires_grad_(true);
    received_[mb].clear();
  }
  torch::Tensor out = stage_.forward(input, step, op.samples);
  if (last_stage()) {
    out = GlobalBatchLoss(out, batch_);
    loss_sum_ += out.detach().to(torch::kFloat64);
  }
  inputs_[mb] = input;
  outputs_[mb] = out;
  return Status::Ok();
}

Status PipelineExecutor::Backward(const Op& op) {
  const auto mb = static_cast<size_t>(op.micro_batch);
  if (last_stage()) {
    outputs_[mb].backward();
  } else {
    outputs_[mb].backward(torch::cat(grads_in_[mb]));
    grads_in_[mb].clear();
  }
  outputs_[mb] = torch::Tensor();
  return Status::Ok();
}

Status PipelineExecutor::RunSchedule(int64_t step, PipelineStepFigures& figures) {
  const size_t m = routes_.step.micro_batches.size();
  received_.assign(m, {});
  grads_in_.assign(m, {});
  inputs_.assign(m, torch::Tensor());
  outputs_.assign(m, torch::Tensor());
  loss_sum_ = torch::zeros({1}, torch::TensorOptions(runtime_.device()).dtype(torch::kFloat64));
  // HETRUN_EMULATE_SLOWDOWN on CPU: this step's factor, `@stepS` entries included (§5.4).
  const double slowdown = runtime_.emulated_slowdown_at(step);
  for (const pipeline::ScheduleStep& entry : schedule_.steps) {
    const auto start = std::chrono::steady_clock::now();
    if (entry.communicate) {
      HETRUN_RETURN_IF_ERROR(Communicate(entry));
      figures.wait_ms += MsSince(start);
    } else if (entry.ops[0].kind == OpKind::kForward) {
      HETRUN_RETURN_IF_ERROR(Forward(entry.ops[0], step));
      Stretch(start, slowdown);
      figures.forward_ms += MsSince(start);
    } else {
      HETRUN_RETURN_IF_ERROR(Backward(entry.ops[0]));
      Stretch(start, slowdown);
      figures.backward_ms += MsSince(start);
    }
  }
  inputs_.assign(m, torch::Tensor());
  return Status::Ok();
}

Result<PipelineStepFigures> PipelineExecutor::Step(int64_t step,
                                                   std::span<const std::vector<double>> shares) {
  const auto start = std::chrono::steady_clock::now();
  PipelineStepFigures figures;
  try {
    if (!shares.empty()) HETRUN_RETURN_IF_ERROR(Plan(shares));
    HETRUN_RETURN_IF_ERROR(RunSchedule(step, figures));
    const auto reduce_start = std::chrono::steady_clock::now();
    HETRUN_RETURN_IF_ERROR(AllReduceGradients(runtime_.data_parallel_group(), stage_.parameters));
    // The loss: the last stage's replicas hold its parts; every rank learns the sum.
    std::vector<torch::Tensor> loss{loss_sum_};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    runtime_.world().allreduce(loss, options)->wait();
    figures.loss = loss[0].item<double>();
    figures.reduce_ms = MsSince(reduce_start);
  } catch (const std::exception& e) {
    return UnavailableError("pipeline step " + std::to_string(step) + " on rank " +
                            std::to_string(runtime_.rank()) + ": " + e.what());
  }
  figures.step_ms = MsSince(start);
  return figures;
}

}  // namespace hetrun

#include "hetrun/adam_state.h"

#include <exception>
#include <memory>
#include <string>

namespace hetrun {
namespace {

bool IsAdamW(const torch::optim::Optimizer& o) {
  return dynamic_cast<const torch::optim::AdamW*>(&o) != nullptr;
}

bool IsAdam(const torch::optim::Optimizer& o) {
  return dynamic_cast<const torch::optim::Adam*>(&o) != nullptr;
}

// amsgrad of the group that holds `param` (the defaults when no group does).
bool AmsGrad(const torch::optim::Optimizer& o, const torch::Tensor& param) {
  const torch::optim::OptimizerOptions* options = &o.defaults();
  for (const torch::optim::OptimizerParamGroup& group : o.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      if (p.is_same(param) && group.has_options()) options = &group.options();
    }
  }
  if (IsAdamW(o)) return static_cast<const torch::optim::AdamWOptions*>(options)->amsgrad();
  return static_cast<const torch::optim::AdamOptions*>(options)->amsgrad();
}

template <typename State>
void ExportState(const torch::optim::Optimizer& o, const torch::Tensor& p, bool amsgrad,
                 std::vector<torch::Tensor>& out) {
  auto it = o.state().find(p.unsafeGetTensorImpl());
  const State* state =
      it == o.state().end() ? nullptr : static_cast<const State*>(it->second.get());
  auto copy = [&p](const torch::Tensor& t) {
    return t.defined() ? t.detach().clone() : torch::zeros_like(p);
  };
  out.push_back(torch::tensor(state ? state->step() : int64_t{0}, torch::kInt64));
  out.push_back(copy(state ? state->exp_avg() : torch::Tensor()));
  out.push_back(copy(state ? state->exp_avg_sq() : torch::Tensor()));
  if (amsgrad) out.push_back(copy(state ? state->max_exp_avg_sq() : torch::Tensor()));
}

template <typename State>
void ImportState(torch::optim::Optimizer& o, const torch::Tensor& p, bool amsgrad,
                 std::span<const torch::Tensor> t) {
  auto state = std::make_unique<State>();
  state->step(t[1].to(torch::kCPU).item<int64_t>());
  state->exp_avg(t[2].to(p.device()).clone());
  state->exp_avg_sq(t[3].to(p.device()).clone());
  if (amsgrad) state->max_exp_avg_sq(t[4].to(p.device()).clone());
  o.state()[p.unsafeGetTensorImpl()] = std::move(state);
}

Status CheckFits(const torch::Tensor& p, std::span<const torch::Tensor> t, size_t index) {
  const std::string name = "parameter " + std::to_string(index);
  if (t[1].numel() != 1 || t[1].scalar_type() != torch::kInt64) {
    return InvalidArgumentError(name + ": the step is not one int64");
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 1) continue;
    if (t[i].sizes() != p.sizes() || t[i].scalar_type() != p.scalar_type()) {
      return InvalidArgumentError(name + " (shape " + c10::str(p.sizes()) + ", " +
                                  std::string(c10::toString(p.scalar_type())) + "): tensor " +
                                  std::to_string(i) + " is " + c10::str(t[i].sizes()) + ", " +
                                  std::string(c10::toString(t[i].scalar_type())));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<int> AdamTensorsPerParameter(const torch::optim::Optimizer& optimizer) {
  if (!IsAdamW(optimizer) && !IsAdam(optimizer)) {
    return InvalidArgumentError(
        "Adam state: the optimizer is neither torch::optim::Adam nor AdamW");
  }
  for (const torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      if (AmsGrad(optimizer, p)) return 5;
    }
  }
  return AmsGrad(optimizer, torch::Tensor()) ? 5 : 4;
}

Result<std::vector<torch::Tensor>> ExportAdamLayer(const torch::optim::Optimizer& optimizer,
                                                   std::span<const torch::Tensor> params) {
  HETRUN_RETURN_IF_ERROR(AdamTensorsPerParameter(optimizer).status());
  std::vector<torch::Tensor> out;
  try {
    for (const torch::Tensor& p : params) {
      const bool amsgrad = AmsGrad(optimizer, p);
      out.push_back(p.detach().clone());
      if (IsAdamW(optimizer)) {
        ExportState<torch::optim::AdamWParamState>(optimizer, p, amsgrad, out);
      } else {
        ExportState<torch::optim::AdamParamState>(optimizer, p, amsgrad, out);
      }
    }
  } catch (const std::exception& e) {
    return InternalError(std::string("exporting Adam state: ") + e.what());
  }
  return out;
}

Status ImportAdamLayer(torch::optim::Optimizer& optimizer, std::span<const torch::Tensor> params,
                       std::span<const torch::Tensor> tensors) {
  HETRUN_RETURN_IF_ERROR(AdamTensorsPerParameter(optimizer).status());
  size_t at = 0;
  try {
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor& p = params[i];
      const bool amsgrad = AmsGrad(optimizer, p);
      const size_t n = amsgrad ? 5 : 4;
      if (at + n > tensors.size()) {
        return InvalidArgumentError("Adam state: " + std::to_string(tensors.size()) +
                                    " tensors for " + std::to_string(params.size()) +
                                    " parameters (" + std::to_string(n) + " each)");
      }
      std::span<const torch::Tensor> mine = tensors.subspan(at, n);
      HETRUN_RETURN_IF_ERROR(CheckFits(p, mine, i));
      {
        torch::NoGradGuard no_grad;
        p.detach().copy_(mine[0]);
      }
      if (IsAdamW(optimizer)) {
        ImportState<torch::optim::AdamWParamState>(optimizer, p, amsgrad, mine);
      } else {
        ImportState<torch::optim::AdamParamState>(optimizer, p, amsgrad, mine);
      }
      at += n;
    }
  } catch (const std::exception& e) {
    return InternalError(std::string("importing Adam state: ") + e.what());
  }
  if (at != tensors.size()) {
    return InvalidArgumentError("Adam state: " + std::to_string(tensors.size()) + " tensors for " +
                                std::to_string(params.size()) + " parameters (" +
                                std::to_string(at) + " expected)");
  }
  return Status::Ok();
}

}  // namespace hetrun

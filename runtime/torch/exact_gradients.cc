#include "hetrun/exact_gradients.h"

#include <exception>
#include <string>

namespace hetrun {

torch::Tensor GlobalBatchLoss(const torch::Tensor& per_sample_losses, int64_t global_batch) {
  if (!per_sample_losses.defined() || per_sample_losses.numel() == 0) {
    return torch::zeros({}, torch::kFloat32);
  }
  return per_sample_losses.sum() / static_cast<double>(global_batch);
}

Status AllReduceGradients(c10d::Backend& group, const std::vector<torch::Tensor>& parameters,
                          torch::Tensor* extras) {
  if (parameters.empty()) return InvalidArgumentError("AllReduceGradients: no parameters");
  try {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> pieces;
    pieces.reserve(parameters.size() + 1);
    for (const torch::Tensor& p : parameters) {
      pieces.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                          : torch::zeros_like(p).reshape({-1}));
    }
    if (extras != nullptr && extras->defined()) pieces.push_back(extras->reshape({-1}));
    // One flat bucket, one collective: fixed order (parameter order), so every rank sums the
    // same layout.
    std::vector<torch::Tensor> flat{torch::cat(pieces)};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    group.allreduce(flat, options)->wait();
    int64_t offset = 0;
    for (const torch::Tensor& p : parameters) {
      torch::Tensor sum = flat[0].narrow(0, offset, p.numel()).view_as(p);
      if (p.grad().defined()) {
        p.mutable_grad().copy_(sum);
      } else {
        p.mutable_grad() = sum.clone();
      }
      offset += p.numel();
    }
    if (extras != nullptr && extras->defined()) {
      extras->copy_(flat[0].narrow(0, offset, extras->numel()).view_as(*extras));
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    return UnavailableError(std::string("gradient all-reduce (") + group.getBackendName() +
                            "): " + e.what());
  }
}

}  // namespace hetrun

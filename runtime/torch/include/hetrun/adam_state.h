// A layer's parameters with their Adam/AdamW state as plain tensors, for live layer moves
// (layer_mover.h): what ExportAdamLayer returns, ImportAdamLayer on the receiving rank takes, and
// the optimizer there continues exactly as the sender's would have.
//
// Per parameter, in order: its value, the step count (an int64 scalar), exp_avg, exp_avg_sq, and
// max_exp_avg_sq when the parameter's group has amsgrad. A parameter the optimizer has no state
// for yet (no step taken) exports step 0 and zero moments, which is what torch::optim::Adam(W)
// starts from on its first step, so importing it is the same as having none.
#pragma once

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <span>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun {

/// Tensors per parameter that Export/ImportAdamLayer use for `optimizer` (4, or 5 with amsgrad).
/// kInvalidArgument when `optimizer` is neither torch::optim::Adam nor AdamW.
Result<int> AdamTensorsPerParameter(const torch::optim::Optimizer& optimizer);

/// `params` (which `optimizer` trains) and their state, as copies (see above).
Result<std::vector<torch::Tensor>> ExportAdamLayer(const torch::optim::Optimizer& optimizer,
                                                   std::span<const torch::Tensor> params);

/// Copies the values into `params` and sets their state in `optimizer` (which trains them).
/// kInvalidArgument naming the parameter when the tensors' count, shapes or dtypes do not fit.
Status ImportAdamLayer(torch::optim::Optimizer& optimizer, std::span<const torch::Tensor> params,
                       std::span<const torch::Tensor> tensors);

}  // namespace hetrun

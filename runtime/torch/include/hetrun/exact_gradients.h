// Exact gradients when ranks hold unequal shares of the batch (docs/ARCHITECTURE.md §5): every rank
// backpropagates the SUM of its per-sample losses scaled by 1/B (B = the group's global batch),
// and the gradients are all-reduced with SUM. The result equals the gradient one process would
// compute on the whole batch with a mean loss, for any split (including a share of 0). The
// all-reduce itself is GradientReducer's (gradient_reducer.h): bucketed, overlapped with backward.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace hetrun {

/// sum(per_sample_losses) / global_batch: the loss to call backward() on. A rank with no samples
/// passes an empty tensor and gets a zero scalar (no graph).
torch::Tensor GlobalBatchLoss(const torch::Tensor& per_sample_losses, int64_t global_batch);

}  // namespace hetrun

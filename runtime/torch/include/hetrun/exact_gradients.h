// Exact gradients when ranks hold unequal shares of the batch (docs/ARCHITECTURE.md §5): every rank
// backpropagates the SUM of its per-sample losses scaled by 1/B (B = the group's global batch),
// and the gradients are all-reduced with SUM. The result equals the gradient one process would
// compute on the whole batch with a mean loss, for any split (including a share of 0). The
// data-parallel path sums with GradientReducer (gradient_reducer.h): bucketed, overlapped with
// backward, no copy of the gradients.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun {

/// sum(per_sample_losses) / global_batch: the loss to call backward() on. A rank with no samples
/// passes an empty tensor and gets a zero scalar (no graph).
torch::Tensor GlobalBatchLoss(const torch::Tensor& per_sample_losses, int64_t global_batch);

/// Sums the gradients of `parameters` over `group` with one all-reduce of one flat buffer, and
/// writes the sums back: after backward, not overlapped, and the flat buffer is a second copy of
/// the gradients for the call's duration (the pipeline executor's stage replicas use it; a
/// data-parallel trainer uses GradientReducer). A parameter without a gradient (no samples on this
/// rank) contributes zeros and receives the sum. `extras` (may be empty; same length on every rank,
/// float32 on the parameters' device) ride along in the same buffer and are summed in place, e.g.
/// the loss sum and the sample count for logging. Waits for completion.
Status AllReduceGradients(c10d::Backend& group, const std::vector<torch::Tensor>& parameters,
                          torch::Tensor* extras = nullptr);

}  // namespace hetrun

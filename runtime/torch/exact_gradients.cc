#include "hetrun/exact_gradients.h"

namespace hetrun {

torch::Tensor GlobalBatchLoss(const torch::Tensor& per_sample_losses, int64_t global_batch) {
  if (!per_sample_losses.defined() || per_sample_losses.numel() == 0) {
    return torch::zeros({}, torch::kFloat32);
  }
  return per_sample_losses.sum() / static_cast<double>(global_batch);
}

}  // namespace hetrun

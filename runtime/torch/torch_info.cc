#include "hetrun/torch_info.h"

#include <torch/cuda.h>
#include <torch/version.h>

namespace hetrun {

TorchInfo GetTorchInfo() {
  TorchInfo info;
  info.version = TORCH_VERSION;
  info.cuda_available = torch::cuda::is_available();
  info.device_count = static_cast<int>(torch::cuda::device_count());
  return info;
}

}  // namespace hetrun

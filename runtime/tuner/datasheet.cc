// Datasheet speeds per GPU family, for the static_datasheet baseline of `hetrun simulate`.
#include <string>

#include "hetrun/tuner/scenario.h"

namespace hetrun::tuner {

Result<double> DatasheetTflops(std::string_view family) {
  // Dense (no 2:4 sparsity) tensor-core TFLOP/s of one representative SKU per family, from
  // NVIDIA's datasheets (see shared/reference/hetero_anchors.md §5 for A100/H100):
  //   volta     V100 SXM2     FP16 125 (no BF16 on Volta; FP16 tensor is its training rate)
  //   turing    T4            FP16 65
  //   ampere    A100 SXM4     BF16 312
  //   ada       L40S          BF16 362 (733 with sparsity)
  //   hopper    H100 SXM5     BF16 989 (1979 with sparsity)
  //   blackwell B200 (HGX)    BF16 2250 (4500 with sparsity)
  struct Entry {
    std::string_view family;
    double tflops;
  };
  static constexpr Entry kTable[] = {
      {"volta", 125}, {"turing", 65},  {"ampere", 312},
      {"ada", 362},   {"hopper", 989}, {"blackwell", 2250},
  };
  for (const Entry& e : kTable) {
    if (e.family == family) return e.tflops;
  }
  return NotFoundError("unknown GPU family '" + std::string(family) +
                       "' (known: volta, turing, ampere, ada, hopper, blackwell)");
}

}  // namespace hetrun::tuner

// TORCH_CUDA_ARCH_LIST with PyTorch's grammar (torch/utils/cpp_extension.py): entries separated
// by ';' or spaces; each "X.Y" (SASS sm_XY), "X.Ya" (sm_XYa, exactly X.Y), optionally "+PTX"
// (adds compute_XY PTX); named architectures (Ampere -> "8.0;8.6+PTX", Hopper -> "9.0+PTX", ...).
// An entry PyTorch would reject is an error naming it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hetrun/arch/compat.h"
#include "hetrun/base/status.h"

namespace hetrun::arch {

struct ArchListEntry {
  ComputeCapability capability;
  bool arch_specific = false;  ///< "9.0a"
  bool ptx = false;            ///< "+PTX"

  /// "9.0a+PTX"
  std::string ToString() const;
};

struct ArchList {
  std::string text;                    ///< as given
  std::vector<ArchListEntry> entries;  ///< after expanding names, in order, without duplicates
};

Result<ArchList> ParseTorchCudaArchList(std::string_view text);

/// How an extension built with `list` runs on `target`.
struct ArchListCoverage {
  ImageFit fit = ImageFit::kNone;
  std::string via;  ///< the entry that provides it ("8.0", "9.0+PTX"); "" when none
};

ArchListCoverage CoverageOf(const ArchList& list, ComputeCapability target);

}  // namespace hetrun::arch

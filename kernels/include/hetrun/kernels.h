// Host API of hetrun's CUDA kernels. Plain C++: no CUDA types leak into callers.
#pragma once

#include <cstdint>
#include <string>

#include "hetrun/base/status.h"

namespace hetrun::kernels {

/// What the probe kernel reports from one device.
struct ProbeResult {
  int device = 0;
  int major = 0;  ///< compute capability reported by the runtime
  int minor = 0;
  int kernel_arch = 0;      ///< __CUDA_ARCH__ the launched image was compiled for (e.g. 800, 900)
  uint64_t free_bytes = 0;  ///< cudaMemGetInfo after context creation
  uint64_t total_bytes = 0;
  std::string name;
};

/// Number of visible CUDA devices; kUnavailable when there is no driver or no device.
Result<int> DeviceCount();

/// Launches the probe kernel on `device` and reads back which kernel image ran.
/// kArchMismatch when no image in this library can run there (CUDA error 209).
Result<ProbeResult> RunProbe(int device);

/// The SASS/PTX architectures this library was compiled with (CMAKE_CUDA_ARCHITECTURES).
std::string CompiledArchitectures();

}  // namespace hetrun::kernels

// The real GPU probe: runs the CUDA probe kernel on every visible GPU in a short-lived child
// process, so the hetrun process that forks workers never initialises CUDA (a CUDA context does
// not survive fork and holds 0.3-0.6 GiB of every GPU it touches).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetrun/job/inventory.h"

namespace hetrun::launcher {

/// One probed GPU, with what the probe kernel reported.
struct ProbedGpu {
  GpuInfo info;
  int kernel_arch = 0;  ///< __CUDA_ARCH__ of the probe image that ran (e.g. 900); 0 when it failed
  std::string error;    ///< why the probe kernel could not run on it ("" when it ran)
};

/// Probes in a child process. Without CUDA kernels in this build, or without a driver or device,
/// the result is an empty list (not an error): callers print "skipped (no GPU)".
Result<std::vector<ProbedGpu>> ProbeGpusInChild();

/// A GpuProbe over ProbeGpusInChild(), for LocalInventory().
std::unique_ptr<GpuProbe> MakeSystemGpuProbe();

/// The line protocol between the probe child and the parent (exposed for tests):
/// "gpu INDEX MAJOR MINOR KERNEL_ARCH FREE_BYTES TOTAL_BYTES NAME" or "err INDEX MESSAGE".
Result<std::vector<ProbedGpu>> ParseProbeOutput(const std::string& text);

}  // namespace hetrun::launcher

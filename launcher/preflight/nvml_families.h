// The GPU family of each local GPU without a CUDA context: NVML (libnvidia-ml.so.1, loaded at run
// time, so hetrun neither links nor needs it) reports each device's compute capability, which
// FamilyForCapability names. Used by `hetrun run` to give workers HETRUN_GPU_FAMILY on real GPUs
// when the job did not set it and no inventory was declared (docs/ARCHITECTURE.md §4.2).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// What NVML reported: one family per device in NVML's (PCI bus) order, and how long the lookup
/// took (nvmlInit_v2 to nvmlShutdown).
struct NvmlFamilies {
  std::vector<std::string> families;
  /// The model of each (gpu_model.h: the product name and memory, else the PCI device id); ""
  /// where NVML told neither.
  std::vector<std::string> models;
  double elapsed_ms = 0;
};

/// Empty (no error) when libnvidia-ml.so.1 is not there: no driver, no GPU. An error names the
/// NVML call that failed.
Result<std::optional<NvmlFamilies>> ReadNvmlFamilies();

/// The family of the GPU a worker with `local_rank` uses, when it can be told without guessing:
/// every GPU of the node has the same family, or CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA's order is
/// NVML's) and CUDA_VISIBLE_DEVICES is unset. nullopt otherwise.
std::optional<std::string> FamilyOfLocalRank(const std::vector<std::string>& families,
                                             const Environment& env, int local_rank);

}  // namespace hetrun::launcher

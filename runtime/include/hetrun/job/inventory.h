// The GPUs of this node: real (probed) or declared (HETRUN_FAKE_GPUS / --fake-gpus).
// Every code path after inventory runs the same on fakes as on real GPUs (docs/ARCHITECTURE.md
// §4.4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

struct GpuInfo {
  std::string name;  ///< "A100-SXM4-80GB"
  int major = 0;     ///< compute capability
  int minor = 0;
  uint64_t usable_bytes =
      0;                     ///< what one process can allocate (free memory after context creation)
  uint64_t total_bytes = 0;  ///< as reported by the driver; 0 when unknown (fakes)
  std::string family;        ///< ampere, hopper, blackwell, ... (FamilyForCapability)
  std::string model;         ///< "h100-sxm5", "a100-pcie-40gb" ... (gpu_model.h); empty: unknown

  /// "8.0"
  std::string CapabilityString() const;
};

/// Where the inventory came from.
enum class InventorySource { kFake, kProbe, kNone };

struct Inventory {
  std::vector<GpuInfo> gpus;
  InventorySource source = InventorySource::kNone;
  std::string source_detail;  ///< "HETRUN_FAKE_GPUS", "--fake-gpus", "CUDA probe", ...
};

/// The family word for a compute capability: 7.0/7.2 volta, 7.5 turing, 8.0/8.6/8.7 ampere,
/// 8.9 ada, 9.x hopper, 10.x and later blackwell. Same words as nvidia.com/gpu.family.
std::string FamilyForCapability(int major, int minor);

/// Parses "NAME:MAJOR.MINOR:USABLE_MIB,..." (e.g. "A100-SXM4-80GB:8.0:81049"). Errors name the
/// entry and what is wrong with it. An empty string is an error (declare at least one GPU).
Result<std::vector<GpuInfo>> ParseFakeGpus(std::string_view text);

/// Formats GPUs back into the HETRUN_FAKE_GPUS syntax (round-trips ParseFakeGpus).
std::string FormatFakeGpus(const std::vector<GpuInfo>& gpus);

/// Probes real GPUs. The production implementation runs the CUDA probe in a short-lived child
/// process (CUDA must never be initialised in the process that forks workers); tests use fakes.
class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  /// The visible GPUs; an empty list when there is no driver or no device.
  virtual Result<std::vector<GpuInfo>> Probe() = 0;
};

/// The local inventory: `fake_flag` (from --fake-gpus) when not empty, else HETRUN_FAKE_GPUS,
/// else `probe` (may be null: then no GPUs). A bad --fake-gpus is a usage error (exit 64), a bad
/// HETRUN_FAKE_GPUS a configuration error (78).
Result<Inventory> LocalInventory(const Environment& env, std::string_view fake_flag,
                                 GpuProbe* probe);

}  // namespace hetrun

// The GPU model as identity (docs/ARCHITECTURE.md §4.6): one normalised model name per GPU
// ("h100-sxm5", "a100-pcie-40gb"), from what NVML or CUDA report (the product name and memory
// size, the PCI device id as a fallback) or from a declared name (--fake-gpus, cluster files).
// The architecture family (inventory.h, FamilyForCapability) stays where the architecture
// matters (kernel images, node labels); the model is what fail-slow peers, the tuner's pooling,
// the planner's speeds and per-model memory ceilings key on: an H100 PCIe is not an H100 SXM5.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace hetrun {

/// One model of the table: what hetrun knows of it, each figure with its source.
struct GpuModelSpec {
  std::string_view id;      ///< the normalised name, at most 15 characters
  std::string_view family;  ///< FamilyForCapability of its compute capability
  int major = 0;            ///< compute capability
  int minor = 0;
  uint32_t pci_device_id = 0;    ///< the PCI device id (vendor 0x10de)
  uint64_t nvidia_smi_mib = 0;   ///< the total nvidia-smi reports (0: not known here)
  double bf16_dense_tflops = 0;  ///< dense BF16 tensor TFLOP/s (no 2:4 sparsity)
  std::string_view source;       ///< where the TFLOP/s (and the MiB) come from
};

/// Every model of the table, in the order of the docs' "GPU models" table.
std::span<const GpuModelSpec> KnownGpuModels();

/// The table's entry for a normalised model name; nullptr when the name is not in it.
const GpuModelSpec* FindGpuModel(std::string_view id);

/// The table's entry for a PCI device id (the upper 16 bits of NVML's pciDeviceId, or the
/// device id alone); nullptr when unknown.
const GpuModelSpec* GpuModelForPciDevice(uint32_t device_id);

/// The normalised model of a product name ("NVIDIA H100 80GB HBM3", "A100-SXM4-80GB", "NVIDIA
/// A100 80GB PCIe", "h200") with its memory in bytes (0 when unknown; it tells A100 40 GB from
/// 80 GB when the name does not): a table id when the name is one of its models, else the name
/// itself lower-cased, "NVIDIA" dropped, runs of other characters as one '-', at most 15
/// characters. Empty for an empty name (unknown model).
std::string NormalizeGpuModel(std::string_view product_name, uint64_t memory_bytes = 0);

}  // namespace hetrun

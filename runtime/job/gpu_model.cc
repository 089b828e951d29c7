// The GPU model table and the normalisation of product names (hetrun/job/gpu_model.h).
#include "hetrun/job/gpu_model.h"

#include <algorithm>
#include <vector>

namespace hetrun {
namespace {

// Dense BF16 tensor TFLOP/s are the datasheet's sparse figure halved where the datasheet gives
// only that. nvidia-smi totals: shared/reference/cuda_facts.md §5.1 (0 where not recorded). PCI
// device ids: the PCI ID repository (pci-ids.ucw.cz, vendor 10de).
constexpr GpuModelSpec kModels[] = {
    {"h100-sxm5", "hopper", 9, 0, 0x2330, 81559, 989.4,
     "NVIDIA H100 datasheet (BF16 1,979 sparse); shared/reference/hetero_anchors.md §5; "
     "glennklockwood.com/garden/processors/h100"},
    {"h100-pcie", "hopper", 9, 0, 0x2331, 0, 756,
     "NVIDIA H100 datasheet, PCIe column (BF16 1,513 sparse); NVIDIA H100 PCIe product brief "
     "PB-11133-001"},
    {"h200", "hopper", 9, 0, 0x2335, 143771, 989.4,
     "NVIDIA H200 datasheet (SXM, BF16 1,979 sparse); shared/reference/hetero_anchors_round3.md; "
     "itkb.uw.cz H200 vs B300 (dense ~989)"},
    {"h20", "hopper", 9, 0, 0x2329, 0, 148,
     "willitrunai.com/gpus/h20-96gb (148 FP16 dense, 96 GB HBM3)"},
    {"a100-sxm4-80gb", "ampere", 8, 0, 0x20b2, 81920, 312,
     "NVIDIA A100 datasheet (BF16 312, 624 sparse); shared/reference/hetero_anchors.md §5"},
    {"a100-sxm4-40gb", "ampere", 8, 0, 0x20b0, 40960, 312,
     "NVIDIA A100 datasheet (BF16 312, 624 sparse); shared/reference/cuda_facts.md §5.1"},
    {"a100-pcie-80gb", "ampere", 8, 0, 0x20b5, 81920, 312,
     "NVIDIA A100 datasheet, PCIe column (BF16 312); hmc-tech.com A100 vs A40 (311.87)"},
    {"a100-pcie-40gb", "ampere", 8, 0, 0x20f1, 40960, 312,
     "NVIDIA A100 datasheet, PCIe column (BF16 312)"},
    {"a40", "ampere", 8, 6, 0x2235, 0, 149.7,
     "NVIDIA A40 datasheet (BF16 149.7, 299.4 sparse); hmc-tech.com A100 vs A40 (149.67)"},
    {"a10", "ampere", 8, 6, 0x2236, 0, 125, "NVIDIA A10 datasheet (BF16 125, 250 sparse)"},
    {"l40s", "ada", 8, 9, 0x26b9, 46068, 362.05,
     "NVIDIA L40S datasheet (BF16 362.05, 733 sparse), as reproduced on mullet.se; "
     "nvidia-smi MiB: cuda_facts.md §5.1"},
    {"l4", "ada", 8, 9, 0x27b8, 23034, 121,
     "NVIDIA L4 datasheet (FP16/BF16 242 sparse; grokipedia.com NVIDIA L4 vs L40S); "
     "nvidia-smi MiB: cuda_facts.md §5.1"},
};

std::vector<std::string> Tokens(std::string_view name) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    if (!current.empty() && current != "nvidia" && current != "tesla") out.push_back(current);
    current.clear();
  };
  for (char c : name) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum) {
      flush();
      continue;
    }
    current += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  flush();
  return out;
}

std::string Slug(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : "-") + t;
  if (out.size() > 15) out.resize(15);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string A100Model(bool pcie, bool has80, bool has40, uint64_t memory_bytes) {
  const bool big = has80 || (!has40 && memory_bytes > (uint64_t{60} << 30));
  return std::string("a100-") + (pcie ? "pcie-" : "sxm4-") + (big ? "80gb" : "40gb");
}

}  // namespace

std::span<const GpuModelSpec> KnownGpuModels() {
  return kModels;
}

const GpuModelSpec* FindGpuModel(std::string_view id) {
  for (const GpuModelSpec& m : kModels) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

const GpuModelSpec* GpuModelForPciDevice(uint32_t device_id) {
  if (device_id > 0xffff) device_id >>= 16;  // NVML's pciDeviceId: device << 16 | vendor
  for (const GpuModelSpec& m : kModels) {
    if (m.pci_device_id == device_id) return &m;
  }
  return nullptr;
}

std::string NormalizeGpuModel(std::string_view product_name, uint64_t memory_bytes) {
  const std::vector<std::string> tokens = Tokens(product_name);
  auto has = [&](std::string_view t) {
    return std::find(tokens.begin(), tokens.end(), t) != tokens.end();
  };
  if (FindGpuModel(Slug(tokens)) != nullptr) return Slug(tokens);
  const bool nvl = has("nvl");
  if (has("h200") && !nvl) return "h200";
  if (has("h20")) return "h20";
  if (has("h100") && !nvl) return has("pcie") ? "h100-pcie" : "h100-sxm5";
  if (has("a100")) return A100Model(has("pcie"), has("80gb"), has("40gb"), memory_bytes);
  for (std::string_view simple : {"a10", "a40", "l40s", "l4"}) {
    if (has(simple)) return std::string(simple);
  }
  return Slug(tokens);
}

}  // namespace hetrun

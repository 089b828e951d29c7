#include "hetrun/memory/memory_ceiling.h"

#include <algorithm>

#include "hetrun/base/units.h"

namespace hetrun::memory {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Reference usable memory per GPU model. Each value is the CUDA-visible total
// (cudaGetDeviceProperties.totalGlobalMem / torch total_memory) quoted in public logs, gathered in
// shared/reference/cuda_facts.md §5.1; a process gets a few hundred MiB less (its context), which
// the reserve covers.
constexpr MemoryBaseline kBaselines[] = {
    {"ampere-40gb", 40339 * kMiB, "A100-SXM4-40GB",
     "deviceQuery 'Total amount of global memory: 40339 MBytes (42298834944 bytes)', "
     "bottlerocket-os/bottlerocket#3873"},
    {"ampere-80gb", 81049 * kMiB, "A100 80GB (SXM4 / PCIe)",
     "'Total global mem 81049 MB' (MiB) on an A100 80GB PCIe, ekondis/mixbench#47; nvidia-smi "
     "shows 81920MiB"},
    {"hopper-80gb", 81082 * kMiB, "H100 80GB HBM3 (SXM5)",
     "smallest of three public torch total_memory logs (81082, 81089, 81090 MiB); nvidia-smi "
     "shows 81559MiB"},
    {"hopper-141gb", 143294 * kMiB, "H200 / H200 NVL",
     "derived: nvidia-smi total 143771MiB (public logs) minus 477 MiB, the largest nvidia-smi to "
     "CUDA-visible gap seen on H100; no public CUDA-visible figure was found"},
};

std::string MiB(uint64_t bytes) {
  return FormatMiB(bytes);
}

}  // namespace

std::span<const MemoryBaseline> MemoryBaselines() {
  return kBaselines;
}

Result<MemoryBaseline> FindMemoryBaseline(std::string_view name) {
  std::string known;
  for (const MemoryBaseline& baseline : kBaselines) {
    if (baseline.name == name) return baseline;
    known += (known.empty() ? "" : ", ") + std::string(baseline.name);
  }
  return UsageError("--memory-baseline '" + std::string(name.substr(0, 64)) +
                    "' is not a known reference GPU (known: " + known + ")");
}

std::string DescribeGpu(const JobGpu& gpu) {
  std::string text = "node " + std::to_string(gpu.node_rank);
  if (!gpu.hostname.empty()) text += " (" + gpu.hostname + ")";
  return text + " GPU " + std::to_string(gpu.index) + " " + gpu.gpu.name;
}

Result<Ceiling> ComputeCeiling(std::span<const JobGpu> gpus, const CeilingOptions& options) {
  if (gpus.empty()) return InvalidArgumentError("no GPU in the job: no memory ceiling to compute");
  auto smallest = std::min_element(gpus.begin(), gpus.end(), [](const JobGpu& a, const JobGpu& b) {
    return a.gpu.usable_bytes < b.gpu.usable_bytes;
  });
  Ceiling ceiling;
  ceiling.smallest = *smallest;
  ceiling.reserve_bytes = options.reserve_bytes;
  uint64_t base = smallest->gpu.usable_bytes;
  std::string from = DescribeGpu(*smallest) + " usable " + MiB(base);
  if (options.baseline && options.baseline->usable_bytes < base) {
    base = options.baseline->usable_bytes;
    ceiling.capped_by_baseline = true;
    from = "baseline " + std::string(options.baseline->name) + " " + MiB(base) +
           " (smallest GPU: " + from + ")";
  }
  if (options.reserve_bytes >= base) {
    return ResourceExhaustedError("memory reserve " + MiB(options.reserve_bytes) +
                                  " is not smaller than " + from + ": no memory left for workers");
  }
  ceiling.bytes = base - options.reserve_bytes;
  ceiling.explanation = "memory ceiling " + MiB(ceiling.bytes) + " = " + from + " - reserve " +
                        MiB(options.reserve_bytes);
  if (ceiling.bytes < options.min_memory_bytes) {
    return ResourceExhaustedError(ceiling.explanation + ", below --min-memory " +
                                  MiB(options.min_memory_bytes) + " (short by " +
                                  MiB(options.min_memory_bytes - ceiling.bytes) + ")");
  }
  return ceiling;
}

Status CheckFreeMemory(std::span<const JobGpu> gpus, const Ceiling& ceiling) {
  const uint64_t need = ceiling.bytes + ceiling.reserve_bytes;
  std::string shorts;
  for (const JobGpu& gpu : gpus) {
    if (gpu.gpu.usable_bytes >= need) continue;
    shorts += (shorts.empty() ? "" : "; ") + DescribeGpu(gpu) + " has " +
              MiB(gpu.gpu.usable_bytes) + " free, needs " + MiB(need) + " (ceiling " +
              MiB(ceiling.bytes) + " + reserve " + MiB(ceiling.reserve_bytes) + ")";
  }
  if (shorts.empty()) return Status::Ok();
  return ResourceExhaustedError("GPU memory held by another process: " + shorts);
}

}  // namespace hetrun::memory

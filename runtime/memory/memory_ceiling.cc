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

Result<CeilingMode> ParseCeilingMode(std::string_view text) {
  if (text == "job") return CeilingMode::kJob;
  if (text == "model") return CeilingMode::kModel;
  return UsageError("'" + std::string(text.substr(0, 64)) + "' is not a ceiling mode (job, model)");
}

uint64_t Ceiling::For(const std::string& model) const {
  auto it = per_model.find(model);
  return mode == CeilingMode::kModel && it != per_model.end() ? it->second : bytes;
}

namespace {

// Model mode: each known model's smallest usable GPU minus the reserve, checked like the job's.
void AddModelCeilings(std::span<const JobGpu> gpus, const CeilingOptions& options,
                      Ceiling& ceiling) {
  std::map<std::string, const JobGpu*> smallest;
  for (const JobGpu& gpu : gpus) {
    if (gpu.gpu.model.empty()) continue;
    const JobGpu*& least = smallest[gpu.gpu.model];
    if (least == nullptr || gpu.gpu.usable_bytes < least->gpu.usable_bytes) least = &gpu;
  }
  std::string parts;
  for (const auto& [model, gpu] : smallest) {
    // The job's smallest GPU passed the reserve check, so every model's does too.
    ceiling.per_model[model] = gpu->gpu.usable_bytes - options.reserve_bytes;
    parts += (parts.empty() ? "" : ", ") + model + " " + MiB(ceiling.per_model[model]) + " (" +
             DescribeGpu(*gpu) + ")";
  }
  ceiling.explanation += "; per model (--memory-ceiling model): " + parts;
}

}  // namespace

Result<Ceiling> ComputeCeiling(std::span<const JobGpu> gpus, const CeilingOptions& options) {
  if (gpus.empty()) return InvalidArgumentError("no GPU in the job: no memory ceiling to compute");
  if (options.mode == CeilingMode::kModel && options.baseline) {
    return InvalidArgumentError(
        "--memory-ceiling model with --memory-baseline " + std::string(options.baseline->name) +
        ": the baseline caps every rank at one reference GPU, per-model ceilings give each model "
        "its own; use one of the two");
  }
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
  ceiling.mode = options.mode;
  if (options.mode == CeilingMode::kModel) {
    AddModelCeilings(gpus, options, ceiling);
  }
  return ceiling;
}

Status CheckFreeMemory(std::span<const JobGpu> gpus, const Ceiling& ceiling) {
  std::string shorts;
  for (const JobGpu& gpu : gpus) {
    const uint64_t mine = ceiling.For(gpu.gpu.model);
    const uint64_t need = mine + ceiling.reserve_bytes;
    if (gpu.gpu.usable_bytes >= need) continue;
    shorts += (shorts.empty() ? "" : "; ") + DescribeGpu(gpu) + " has " +
              MiB(gpu.gpu.usable_bytes) + " free, needs " + MiB(need) + " (ceiling " + MiB(mine) +
              " + reserve " + MiB(ceiling.reserve_bytes) + ")";
  }
  if (shorts.empty()) return Status::Ok();
  return ResourceExhaustedError("GPU memory held by another process: " + shorts);
}

}  // namespace hetrun::memory

// The job-wide GPU memory ceiling (docs/ARCHITECTURE.md §1, §4.2): one number of bytes that every
// rank of the job stays under, taken from the smallest usable GPU of the whole job (the A100-safe
// watermark), so a script tuned on an H100 does not run out of memory on an A100 at step 1000.
//
//   ceiling = min(min over every GPU of the job of usable_bytes, baseline usable_bytes) - reserve
//
// usable_bytes is what one process can allocate on the idle device (CUDA's free memory after
// context creation, measured on the node; for fakes the declared number). The reserve covers
// what the allocator cap does not see: the worker's own CUDA context and libraries, NCCL buffers,
// fragmentation. A pure computation: no CUDA, no globals.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/job/inventory.h"

namespace hetrun::memory {

/// Default --memory-reserve: 2 GiB (docs/how-to/memory-ceiling.md justifies it).
inline constexpr uint64_t kDefaultReserveBytes = uint64_t{2} << 30;

/// A documented reference GPU for --memory-baseline FAMILY-SIZE.
struct MemoryBaseline {
  std::string_view name;    ///< "ampere-80gb"
  uint64_t usable_bytes;    ///< reference usable bytes of that GPU
  std::string_view gpu;     ///< "A100 80GB (SXM4 / PCIe)"
  std::string_view source;  ///< where the number comes from
};

/// Every reference value, in table order.
std::span<const MemoryBaseline> MemoryBaselines();

/// The baseline called `name` ("ampere-80gb"); a usage error listing the known names otherwise.
Result<MemoryBaseline> FindMemoryBaseline(std::string_view name);

/// One GPU of the job, with where it is.
struct JobGpu {
  int node_rank = 0;
  std::string hostname;
  int index = 0;  ///< local device index on its node
  GpuInfo gpu;
};

/// "node 1 (host-b) GPU 0 A100-SXM4-80GB"
std::string DescribeGpu(const JobGpu& gpu);

/// --memory-ceiling: one ceiling for the job (the default, the A100-safe rule), or one per GPU
/// model (opt-in): each rank's ceiling is the smallest usable memory of its model in the job
/// minus the reserve, so an H200 beside A100s keeps its memory. A GPU of unknown model gets the
/// job-wide one.
enum class CeilingMode { kJob, kModel };

/// "job" or "model"; a usage error naming the value otherwise.
Result<CeilingMode> ParseCeilingMode(std::string_view text);

struct CeilingOptions {
  CeilingMode mode = CeilingMode::kJob;
  uint64_t reserve_bytes = kDefaultReserveBytes;
  std::optional<MemoryBaseline> baseline;  ///< --memory-baseline
  uint64_t min_memory_bytes = 0;           ///< --min-memory (the user's declared need); 0 = none
};

struct Ceiling {
  uint64_t bytes = 0;  ///< the job-wide ceiling (in model mode: the smallest model's)
  uint64_t reserve_bytes = 0;
  JobGpu smallest;  ///< the GPU with the least usable memory
  bool capped_by_baseline = false;
  std::string explanation;  ///< one line: where the number comes from, in MiB
  CeilingMode mode = CeilingMode::kJob;
  /// Model mode: each model's ceiling (its smallest usable GPU in the job - reserve).
  std::map<std::string, uint64_t> per_model;

  /// The ceiling of a GPU of `model`: its model's in model mode, else (job mode, unknown model)
  /// the job-wide one.
  uint64_t For(const std::string& model) const;
};

/// The ceiling over `gpus` (every GPU of every node): job-wide, or per model with
/// CeilingMode::kModel (which refuses a baseline: kInvalidArgument, the baseline caps every rank at
/// one reference GPU, the opposite of per-model ceilings). Errors (exit 81,
/// kResourceExhausted): the ceiling is below `min_memory_bytes`, or the reserve is not smaller than
/// the smallest GPU; messages name the node, the GPU and the numbers in MiB. An empty list (a CPU
/// job) is kInvalidArgument: the caller skips the ceiling when no node has a GPU.
Result<Ceiling> ComputeCeiling(std::span<const JobGpu> gpus, const CeilingOptions& options);

/// Checks that every GPU in `gpus` has at least its ceiling + reserve bytes free now (another
/// process may hold memory: a leftover worker, a neighbour). kResourceExhausted naming each short
/// GPU in MiB otherwise. `gpus[i].gpu.usable_bytes` is the free memory measured now.
Status CheckFreeMemory(std::span<const JobGpu> gpus, const Ceiling& ceiling);

}  // namespace hetrun::memory

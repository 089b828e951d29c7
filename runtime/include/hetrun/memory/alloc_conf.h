// Merging hetrun's memory ceiling into PyTorch's allocator settings (PYTORCH_ALLOC_CONF).
//
// torch >= 2.11 (verified in the pinned wheel's c10/cuda/CUDAAllocatorConfig.h, which lists
// "per_process_memory_fraction" among its keys) caps the CUDA caching allocator at
// fraction * total device memory when PYTORCH_ALLOC_CONF carries per_process_memory_fraction:F.
// Older releases reject unknown keys, so the key is written only for a torch that has it.
// In 2.11 the CUDA allocator reads PYTORCH_CUDA_ALLOC_CONF first and PYTORCH_ALLOC_CONF only when
// the former is unset: the fraction goes into whichever of the two the allocator will read.
// A fraction the user set is never replaced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::memory {

/// True for a torch version ("2.11.0+cu130") whose allocator accepts per_process_memory_fraction.
bool TorchSupportsMemoryFraction(std::string_view torch_version);

/// The largest fraction (6 decimals, rounded down) with fraction * device_bytes <= ceiling_bytes;
/// 1.0 at most. `device_bytes` is the device's total (what torch multiplies by).
double MemoryFraction(uint64_t ceiling_bytes, uint64_t device_bytes);

/// "0.951234" (6 decimals).
std::string FormatFraction(double fraction);

/// One "key:value" item of an allocator setting; values may be bracketed lists with commas.
struct AllocConfItem {
  std::string key;
  std::string value;
};

/// Splits "a:1,b:[x,y]" into items (whitespace around keys and values is dropped). An item
/// without ':' is kInvalidArgument naming `variable`.
Result<std::vector<AllocConfItem>> ParseAllocConf(std::string_view text, std::string_view variable);

/// What to write for one worker.
struct AllocConfMerge {
  std::string variable;  ///< PYTORCH_CUDA_ALLOC_CONF when the user set it, else PYTORCH_ALLOC_CONF
  std::optional<std::string> value;  ///< the merged value; nullopt = leave the variable as it is
  std::string note;                  ///< why nothing was written ("" when the fraction was merged)
};

/// Merges per_process_memory_fraction:`fraction` into the user's settings in `env`, keeping every
/// other item in order. Leaves the settings alone (value nullopt, with a note) when the user set a
/// fraction already, or chose backend:cudaMallocAsync (the key is native-allocator only).
Result<AllocConfMerge> MergeMemoryFraction(const Environment& env, double fraction);

}  // namespace hetrun::memory

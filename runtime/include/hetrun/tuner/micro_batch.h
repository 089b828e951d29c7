// Micro-batches per rank: the largest micro-batch that fits the rank's memory cap, and how many
// of them make up its share (docs/ARCHITECTURE.md §5).
#pragma once

#include <cstdint>

#include "hetrun/base/status.h"

namespace hetrun::tuner {

/// Memory a rank needs for one micro-batch of m samples: fixed_bytes + m * bytes_per_sample
/// (weights, gradients, optimizer state, workspace; then activations per sample).
struct MemoryModel {
  int64_t fixed_bytes = 0;       ///< >= 0
  int64_t bytes_per_sample = 0;  ///< > 0
};

/// The largest m with fixed + m * per_sample <= cap_bytes. kResourceExhausted when not even one
/// sample fits; kInvalidArgument for negative or zero inputs.
Result<int64_t> LargestMicroBatch(const MemoryModel& model, int64_t cap_bytes);

struct MicroBatchPlan {
  int64_t size = 0;      ///< the largest micro-batch that fits (the input `max_size`)
  int64_t count = 0;     ///< ceil(share / size); 0 for a share of 0
  int64_t balanced = 0;  ///< ceil(share / count): equal-sized micro-batches, same count
};

/// The plan for `share` samples with micro-batches of at most `max_size` (>= 1) samples.
Result<MicroBatchPlan> PlanMicroBatches(int64_t share, int64_t max_size);

}  // namespace hetrun::tuner

// Micro-batch size and count per rank.
#include "hetrun/tuner/micro_batch.h"

#include <string>

namespace hetrun::tuner {

Result<int64_t> LargestMicroBatch(const MemoryModel& model, int64_t cap_bytes) {
  if (model.fixed_bytes < 0 || model.bytes_per_sample <= 0 || cap_bytes < 0) {
    return InvalidArgumentError(
        "micro-batch: fixed bytes must be >= 0, bytes per sample > 0, "
        "the memory cap >= 0");
  }
  if (cap_bytes < model.fixed_bytes ||
      (cap_bytes - model.fixed_bytes) / model.bytes_per_sample < 1) {
    return ResourceExhaustedError("micro-batch: the memory cap of " + std::to_string(cap_bytes) +
                                  " bytes does not fit one sample (" +
                                  std::to_string(model.fixed_bytes) + " fixed + " +
                                  std::to_string(model.bytes_per_sample) + " per sample)");
  }
  return (cap_bytes - model.fixed_bytes) / model.bytes_per_sample;
}

Result<MicroBatchPlan> PlanMicroBatches(int64_t share, int64_t max_size) {
  if (share < 0 || max_size < 1) {
    return InvalidArgumentError("micro-batch: share must be >= 0 and the size >= 1, got share " +
                                std::to_string(share) + ", size " + std::to_string(max_size));
  }
  MicroBatchPlan plan;
  plan.size = max_size;
  plan.count = share == 0 ? 0 : (share - 1) / max_size + 1;
  plan.balanced = plan.count == 0 ? 0 : (share - 1) / plan.count + 1;
  return plan;
}

}  // namespace hetrun::tuner

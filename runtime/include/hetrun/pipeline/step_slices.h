// One step's sample geometry (docs/ARCHITECTURE.md §5): the micro-batches of the global batch,
// and each stage's per-replica slice of every micro-batch (the per-stage micro-batch slice).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/sample_range.h"

namespace hetrun::pipeline {

struct StepSlices {
  std::vector<SampleRange> micro_batches;  ///< M consecutive ranges covering [0, batch)
  /// slices[stage][micro_batch][replica]: consecutive ranges covering that micro-batch.
  std::vector<std::vector<std::vector<SampleRange>>> slices;

  const SampleRange& Slice(int stage, int64_t micro_batch, int replica) const;
};

/// The step's slices for a global batch of `batch` samples, with the layout's micro-batch count
/// and minimum share and `shares[stage][replica]` (the tuner's current shares; the layout's own
/// when `shares` is empty). kInvalidArgument when a stage's shares do not match its replicas, or
/// when a micro-batch is too small for a stage's replicas (the message names the stage, the
/// micro-batch size and D_s × the minimum share).
Result<StepSlices> SliceStep(const JobLayout& layout, int64_t batch,
                             std::span<const std::vector<double>> shares = {});

}  // namespace hetrun::pipeline

// Sample ranges of a pipeline step (docs/ARCHITECTURE.md §5): the global batch cut into M
// micro-batches, and each micro-batch cut among a stage's replicas by that stage's shares.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::pipeline {

/// Samples [begin, end) of the global batch.
struct SampleRange {
  int64_t begin = 0;
  int64_t end = 0;

  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool operator==(const SampleRange&) const = default;
  /// "[4, 9)"
  std::string ToString() const;
};

/// The samples both ranges hold (empty when they do not meet).
SampleRange Overlap(const SampleRange& a, const SampleRange& b);

/// The batch [0, batch) cut into `micro_batches` consecutive ranges whose sizes differ by at most
/// one (the first batch mod M are one larger). kInvalidArgument when M < 1 or M > batch.
Result<std::vector<SampleRange>> SplitBatch(int64_t batch, int64_t micro_batches);

/// `range` cut into one consecutive piece per share, in order, each piece as close to
/// size * share / Σ shares as whole samples allow (largest remainder, ties to the lower index) and
/// at least `min_share` samples. kInvalidArgument when a share is not positive and finite, or
/// when the range holds fewer than shares.size() * min_share samples (the message names both).
Result<std::vector<SampleRange>> SplitByShares(const SampleRange& range,
                                               std::span<const double> shares, int64_t min_share);

}  // namespace hetrun::pipeline

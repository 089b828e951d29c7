// The load-balancing tuner's public contract (ARCHITECTURE.md §5). Pure C++, no libtorch:
// runtime/torch feeds it measured times and exchanges RankFit records with an all-gather;
// `hetrun simulate` drives the same code with simulated times.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hetrun/status.h"

namespace hetrun::tuner {

/// One rank's fitted cost model and limits, exchanged between ranks every window. Plain bytes:
/// every rank must see bit-identical records so every rank computes the same shares.
struct RankFit {
  double a_ms = 0;  ///< fixed time per iteration (ms), >= 0
  double c_ms = 0;  ///< time per sample (ms), > 0
  int64_t cap = 0;  ///< most samples this rank may take per iteration
  int64_t n = 0;    ///< samples it processed in the window just measured
};
static_assert(sizeof(RankFit) == 32, "RankFit is exchanged as raw bytes");

/// Integer shares n_r (sum = batch, 0 <= n_r <= cap_r) minimising max_r(a_r + c_r * n_r), exactly.
/// Deterministic: identical input bytes give identical output on every rank.
/// kInvalidArgument when the caps cannot hold the batch or a record is not finite/positive.
Result<std::vector<int64_t>> SolveShares(int64_t batch, std::span<const RankFit> ranks);

}  // namespace hetrun::tuner

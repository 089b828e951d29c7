// The load-balancing tuner's public contract (docs/ARCHITECTURE.md §5). Pure C++, no libtorch:
// runtime/torch feeds it measured times and exchanges RankFit records with an all-gather;
// `hetrun simulate` drives the same code with simulated times.
//
// Cost model of one iteration of a group of ranks that synchronise gradients: rank r given n_r
// samples takes t_r(n_r) = a_r + c_r * n_r milliseconds, and the iteration takes max_r t_r(n_r).
// A rank given 0 samples still pays a_r: it still runs the step and joins the barrier.
//
// The pieces (one header each under hetrun/tuner/): cost_model.h (per-rank fit from measured
// times), controller.h (windows, dead band, step limit; the API runtime/torch calls),
// micro_batch.h, scenario.h + simulator.h (`hetrun simulate`).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::tuner {

/// One rank's fitted cost model and limits, exchanged between ranks every window. Plain bytes:
/// every rank must see bit-identical records so every rank computes the same shares.
struct RankFit {
  double a_ms = 0;  ///< fixed time per iteration (ms), >= 0
  double c_ms = 0;  ///< time per sample (ms), > 0
  int64_t cap = 0;  ///< most samples this rank may take per iteration
  int64_t n = 0;    ///< samples it processed in the window just measured
  /// Standard error of the fit's time at n (ms), from the window medians' spread; 0 = unknown.
  /// The controller widens its dead band by it, so noise alone does not move samples.
  double sigma_ms = 0;
  /// The rank's GPU family as a pool key (FamilyPoolKey in family_pool.h); 0 = unknown. Ranks of
  /// one family pool their fits in the controller (family_pool.h).
  int32_t family = 0;
  int32_t reserved = 0;  ///< zero: every byte of the record is defined
};
static_assert(sizeof(RankFit) == 48, "RankFit is exchanged as raw bytes");

/// a + c * n in milliseconds, evaluated the one way every tuner comparison uses (the tuner's
/// sources are compiled with -ffp-contract=off, so no compiler fuses it differently).
double PredictedMs(const RankFit& fit, int64_t n);

/// max_r PredictedMs(ranks[r], shares[r]); 0 for no ranks. Sizes must match.
double PredictedIterationMs(std::span<const RankFit> ranks, std::span<const int64_t> shares);

/// Integer shares n_r (sum = batch, 0 <= n_r <= cap_r) minimising max_r(a_r + c_r * n_r), exactly.
/// A rank with n_r = 0 counts with a_r (see above). Among the optimal splits it returns the one
/// the greedy "give the next sample to the rank whose time after taking it is smallest, ties to
/// the lowest rank index" builds: shares are the B smallest values of {a_r + c_r * k : 1 <= k <=
/// cap_r} in the order (value, rank). Deterministic: identical input bytes give identical output
/// on every rank (no hashing, no parallelism, no data-dependent ordering beyond that rule).
/// kInvalidArgument when the caps cannot hold the batch or a record is not finite/positive.
/// O(R) time for R ranks, independent of the batch size (typically 4 passes over the ranks; at
/// most ~80 for adversarial records, bounded by bisection over the bits of a double).
Result<std::vector<int64_t>> SolveShares(int64_t batch, std::span<const RankFit> ranks);

}  // namespace hetrun::tuner

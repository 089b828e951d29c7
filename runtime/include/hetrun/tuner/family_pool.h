// Pooling the cost models of ranks of one GPU family (docs/ARCHITECTURE.md §5.2, "Family
// pooling"). Ranks of one family usually run at one speed; each rank's own fit carries the noise
// of its own few windows, and the split is set by the worst of R such errors (the rank whose time
// is read lowest gets too many samples: about sqrt(2 ln R) standard errors too many). Per-rank
// estimation cannot do better than its own measurements allow (5% per-step noise, 10-step windows:
// a window's median is off by ~2%; with 512 ranks the slowest is then ~3 x 2% / sqrt(windows)
// slower than planned), but the family's other ranks measure the same speed. An empirical-Bayes
// estimate shrinks each rank's line toward its family's pooled line by how much the family's ranks
// really differ (the spread of their levels beyond their own noise): identical ranks share one
// line, ranks that differ keep theirs, and a rank far outside its family (a sick GPU, a different
// clock) keeps its own fit untouched.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hetrun/tuner/solver.h"

namespace hetrun::tuner {

struct FamilyPoolOptions {
  /// Off: every rank's own fit is used as it is.
  bool enabled = true;
  /// A family pools only with at least this many ranks that have a fit and a noise estimate.
  int min_ranks = 3;
  /// A rank whose level is further than sqrt(2 ln m) + outlier_margin standard deviations (its
  /// noise and the family's spread together, m ranks in the family) from the family's median is
  /// not pooled: the largest of m draws from the family's own spread reaches about sqrt(2 ln m),
  /// so beyond the margin it is most likely a different speed.
  double outlier_margin = 2;
};

/// The pool key of a family name: FNV-1a (32 bits) of the name, never 0; 0 for an empty name
/// ("unknown": not pooled). Ranks pool when their keys are equal.
int32_t FamilyPoolKey(std::string_view family);

/// Each fit (RankFit::family != 0, c_ms > 0, sigma_ms > 0) of a family with at least min_ranks
/// such fits, blended with its family's pooled line: own x (1 - B) + pooled x B at the rank's
/// share, B = s^2 / (s^2 + tau^2), s the rank's relative noise and tau^2 the family's spread of
/// relative levels beyond the noise (robust: from the median absolute deviation). sigma_ms shrinks
/// accordingly. Every blend is scaled by a fade from 1 (the model's median rank's B at 0.7 or
/// more) to 0 (B at 0.4 or less: the spread beyond the noise 1.5 times the median noise, the
/// cards are not alike), so as the spread grows the shrinkage vanishes and the split is the one
/// the own fits give (tests/runtime/tuner/pool_spread_test.cc). The key is the
/// GPU model (hetrun/job/gpu_model.h), never the family. Other fits, and outliers, are returned
/// unchanged. Deterministic: the result is a function of the input bytes only (no hashing of
/// pointers, sorts with total orders).
std::vector<RankFit> PoolFamilies(std::span<const RankFit> fits, const FamilyPoolOptions& options);

}  // namespace hetrun::tuner

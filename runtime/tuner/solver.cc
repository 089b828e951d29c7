// Exact integer min-max split of a batch over ranks with linear costs (hetrun/tuner/solver.h).
//
// Let v(r, k) = a_r + c_r * k for 1 <= k <= cap_r: the time of rank r once it holds k samples.
// Every rank pays at least a_r, and for any threshold T the most samples rank r can hold without
// exceeding T is count_r(T) = #{k : v(r, k) <= T} (a prefix, since v is non-decreasing in k, also
// in floating point). So a split with max time <= T exists iff T >= max_r a_r and
// sum_r count_r(T) >= B, and the B smallest values (ties ordered by rank, then k) form an optimal
// split: each rank's largest chosen value is <= the B-th smallest, and a rank holding 0 costs
// a_r <= max_r a_r, which every split pays anyway.
//
// Finding them without walking B samples, in O(R) per step: a bracket lo < hi of thresholds with
// count(lo) < B <= count(hi) is narrowed (guarded Newton on the continuous relaxation, then
// bisection on the doubles' bit patterns, so at most ~64 more steps in adversarial cases) until
// one of two exact finishes applies:
//  - few values lie in (lo, hi] (at most kSlackPerRank * R + kSlackFixed): list them and select
//    the D = B - count(lo) smallest in (value, rank) order with std::nth_element;
//  - lo and hi are adjacent doubles: every value in (lo, hi] equals hi, so the D samples go in
//    rank order.
// A cheap upper end is tried first whenever lo improves: the D-th smallest of the ranks' next
// values v(r, count_r(lo) + 1) has count >= B. With caps not binding the first Newton step
// already lands within R of B, so a typical call is two passes over the ranks plus two
// selections. The answer depends only on the (value, rank) order, never on the path to it, so it
// is the same on every rank for the same bytes. No heap; scratch is reused per thread.
#include "hetrun/tuner/solver.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace hetrun::tuner {
namespace {

// Sanity limits that keep every value a + c * k finite and every k exact in a double.
constexpr int64_t kMaxBatch = int64_t{1} << 50;
constexpr double kMaxMs = 1e12;

struct Line {
  double a;
  double c;
  double inv_c;  // 1 / c, for the relaxation's slope only (never for exact counts)
  int64_t cap;   // min(cap, batch): a rank never needs more than the batch
};

double Value(const Line& line, int64_t k) {
  return line.a + line.c * static_cast<double>(k);
}

// The largest k in [lo_k, cap] with Value(k) <= t, given Value(lo_k) <= t; gallops so that runs of
// equal values (c tiny next to a) cost O(log run), not O(run).
int64_t LastAtMostFrom(const Line& line, double t, int64_t lo_k) {
  int64_t step = 1;
  int64_t hi_k = lo_k;  // invariant: Value(hi_k) <= t
  while (hi_k < line.cap) {
    int64_t probe = std::min(line.cap, hi_k + step);
    if (Value(line, probe) <= t) {
      hi_k = probe;
      step *= 2;
    } else {
      // Binary search in (hi_k, probe).
      int64_t good = hi_k;
      int64_t bad = probe;
      while (bad - good > 1) {
        int64_t mid = good + (bad - good) / 2;
        if (Value(line, mid) <= t) {
          good = mid;
        } else {
          bad = mid;
        }
      }
      return good;
    }
  }
  return hi_k;
}

// count_r(t) = #{1 <= k <= cap : Value(k) <= t}, exact with respect to Value().
int64_t CountAtMost(const Line& line, double t) {
  if (line.cap == 0 || !(Value(line, 1) <= t)) return 0;
  double guess = std::floor((t - line.a) / line.c);
  int64_t k = 1;
  if (guess >= static_cast<double>(line.cap)) {
    k = line.cap;
  } else if (guess > 1) {
    k = static_cast<int64_t>(guess);
  }
  // The guess may be off by a rounding step either way; step down to a value <= t first.
  if (!(Value(line, k) <= t)) {
    int64_t step = 1;
    int64_t bad = k;
    int64_t good = std::max<int64_t>(1, k - step);
    while (good > 1 && !(Value(line, good) <= t)) {
      bad = good;
      step *= 2;
      good = std::max<int64_t>(1, k - step);
    }
    while (bad - good > 1) {
      int64_t mid = good + (bad - good) / 2;
      if (Value(line, mid) <= t) {
        good = mid;
      } else {
        bad = mid;
      }
    }
    return good;
  }
  return LastAtMostFrom(line, t, k);
}

// Lists at most kSlackPerRank * R + kSlackFixed values between two thresholds in the final step.
constexpr int64_t kSlackPerRank = 4;
constexpr int64_t kSlackFixed = 64;
// Guarded Newton steps before the search falls back to bisection only.
constexpr int kNewtonSteps = 12;

// Sum of count_r(t) (exact), writing each count_r(t) to `counts`, plus the continuous relaxation
// sum_r clamp((t - a_r) / c_r, 0, cap_r) and its slope for the Newton step.
struct Probe {
  int64_t count = 0;
  double relaxed = 0;
  double slope = 0;
  int64_t partial = 0;  // ranks strictly between 0 and their cap in the relaxation
};

Probe Evaluate(const std::vector<Line>& lines, double t, std::vector<int64_t>& counts) {
  Probe p;
  for (size_t r = 0; r < lines.size(); ++r) {
    const Line& line = lines[r];
    int64_t k = CountAtMost(line, t);
    counts[r] = k;
    p.count += k;
    double x = (t - line.a) / line.c;
    double cap = static_cast<double>(line.cap);
    if (x <= 0) continue;
    if (x >= cap) {
      p.relaxed += cap;
    } else {
      p.relaxed += x;
      p.slope += line.inv_c;
      ++p.partial;
    }
  }
  return p;
}

// Lists every value in (lo, hi] (those beyond counts_lo), or returns false as soon as there are
// more than `limit`.
bool ListBetween(const std::vector<Line>& lines, const std::vector<int64_t>& counts_lo, double hi,
                 size_t limit, std::vector<double>& values) {
  values.clear();
  for (size_t r = 0; r < lines.size(); ++r) {
    const Line& line = lines[r];
    for (int64_t k = counts_lo[r] + 1; k <= line.cap; ++k) {
      double v = Value(line, k);
      if (!(v <= hi)) break;
      if (values.size() == limit) return false;
      values.push_back(v);
    }
  }
  return true;
}

// The d-th smallest (1-based) of `values`, which it reorders.
double NthSmallest(std::vector<double>& values, int64_t d) {
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(d - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

// Given the B-th smallest value `last` and count_r(lo) <= count_r(< last), the shares: every
// value below `last`, then the values equal to it in rank order (the documented tie-break) until
// the batch is full. `equal` is scratch. Only values in (lo, last] are visited, so the caller
// guarantees there are few of them, or that lo and last are adjacent doubles (`adjacent`: then
// count_r(< last) = count_r(lo) and the equal ones are counted, not walked).
Status TakeUpTo(const std::vector<Line>& lines, const std::vector<int64_t>& counts_lo, double last,
                bool adjacent, int64_t batch, std::vector<int64_t>& equal,
                std::vector<int64_t>& shares) {
  int64_t missing = batch;
  for (size_t r = 0; r < lines.size(); ++r) {
    const Line& line = lines[r];
    int64_t k = counts_lo[r];
    if (adjacent) {
      equal[r] = CountAtMost(line, last) - k;
    } else {
      while (k < line.cap && Value(line, k + 1) < last) ++k;
      int64_t e = k;
      while (e < line.cap && Value(line, e + 1) == last) ++e;
      equal[r] = e - k;
    }
    shares[r] = k;
    missing -= k;
  }
  for (size_t r = 0; r < lines.size() && missing > 0; ++r) {
    int64_t take = std::min(missing, equal[r]);
    shares[r] += take;
    missing -= take;
  }
  if (missing != 0) return InternalError("tuner: solver lost track of the batch");
  return Status::Ok();
}

// Scratch reused by every call on a thread: a solve at 16384 ranks needs ~1 MiB, which malloc
// would otherwise map and unmap (page faults) on every call. Reached through a non-inlined
// function so the hot loops hold a plain pointer instead of re-deriving the thread-local address.
struct Workspace {
  std::vector<Line> lines;
  std::vector<int64_t> counts_lo;  // count_r(lo)
  std::vector<int64_t> counts;     // count_r(t) at the latest probe; scratch
  std::vector<double> values;      // values between lo and hi, or the candidates for hi
};

[[gnu::noinline]] Workspace* ThreadWorkspace() {
  thread_local Workspace workspace;
  return &workspace;
}

// The double halfway between two non-negative doubles in ulps (their bit patterns are ordered
// like their values), so bisection ends after at most 64 halvings.
double MidpointInUlps(double lo, double hi) {
  auto lo_bits = std::bit_cast<uint64_t>(lo);
  auto hi_bits = std::bit_cast<uint64_t>(hi);
  return std::bit_cast<double>(lo_bits + (hi_bits - lo_bits) / 2);
}

Status CheckInputs(int64_t batch, std::span<const RankFit> ranks) {
  if (batch < 0 || batch > kMaxBatch) {
    return InvalidArgumentError("tuner: batch " + std::to_string(batch) + " is outside [0, 2^50]");
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankFit& f = ranks[r];
    // One branch per rank on the hot path; the message is built only for a bad record.
    bool a_ok = std::isfinite(f.a_ms) && f.a_ms >= 0 && f.a_ms <= kMaxMs;
    bool c_ok = std::isfinite(f.c_ms) && f.c_ms > 0 && f.c_ms <= kMaxMs;
    if (a_ok && c_ok && f.cap >= 0) continue;
    std::string where = "tuner: rank " + std::to_string(r) + ": ";
    if (!a_ok) {
      return InvalidArgumentError(where + "fixed time a_ms must be in [0, 1e12], got " +
                                  std::to_string(f.a_ms));
    }
    if (!c_ok) {
      return InvalidArgumentError(where + "time per sample c_ms must be in (0, 1e12], got " +
                                  std::to_string(f.c_ms));
    }
    return InvalidArgumentError(where + "cap must be >= 0, got " + std::to_string(f.cap));
  }
  return Status::Ok();
}

}  // namespace

double PredictedMs(const RankFit& fit, int64_t n) {
  return fit.a_ms + fit.c_ms * static_cast<double>(n);
}

double PredictedIterationMs(std::span<const RankFit> ranks, std::span<const int64_t> shares) {
  double worst = 0;
  for (size_t r = 0; r < ranks.size() && r < shares.size(); ++r) {
    worst = std::max(worst, PredictedMs(ranks[r], shares[r]));
  }
  return worst;
}

namespace {

// Fills ws.lines from the records; returns the room the caps leave (sum of min(cap, batch)) and
// the sums the first Newton guess needs.
struct LineSums {
  int64_t room = 0;
  double hi = 0;  // the largest value any rank can reach: count(hi) = room
  double sum_a_over_c = 0;
  double sum_inv_c = 0;
};

LineSums BuildLines(int64_t batch, std::span<const RankFit> ranks, std::vector<Line>& lines) {
  LineSums sums;
  lines.resize(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankFit& f = ranks[r];
    lines[r] = {f.a_ms, f.c_ms, 1.0 / f.c_ms, std::min(f.cap, batch)};
    sums.room += lines[r].cap;  // <= R * 2^50: no overflow for any R that fits in memory
    if (lines[r].cap > 0) sums.hi = std::max(sums.hi, Value(lines[r], lines[r].cap));
    sums.sum_a_over_c += f.a_ms / f.c_ms;
    sums.sum_inv_c += lines[r].inv_c;
  }
  return sums;
}

// Bracket: count(lo) < B <= count(hi). count_hi < 0 means "not evaluated" (only that it is >= B).
struct Bracket {
  double lo = 0;
  double hi = 0;
  int64_t count_lo = 0;
  int64_t count_hi = 0;
};

// After count(lo) improved: the D-th smallest next value (D = B - count(lo)) has count >= B, a
// cheap upper end; when few values lie below it, select among them and finish. True when
// `shares` holds the answer.
Result<bool> TightenFromBelow(const std::vector<Line>& lines, int64_t batch, size_t limit,
                              Workspace* ws, Bracket& b, std::vector<int64_t>& shares) {
  const int64_t missing = batch - b.count_lo;
  std::vector<double>& values = ws->values;
  values.clear();
  for (size_t r = 0; r < lines.size(); ++r) {
    if (ws->counts_lo[r] < lines[r].cap) values.push_back(Value(lines[r], ws->counts_lo[r] + 1));
  }
  if (static_cast<size_t>(missing) > values.size()) return false;
  double x = NthSmallest(values, missing);
  if (x < b.hi) {
    b.hi = x;
    b.count_hi = -1;
  }
  if (!ListBetween(lines, ws->counts_lo, b.hi, limit, values)) return false;
  double last = NthSmallest(values, missing);
  HETRUN_RETURN_IF_ERROR(TakeUpTo(lines, ws->counts_lo, last, false, batch, ws->counts, shares));
  return true;
}

// Where Newton aims. The relaxation exceeds the count by the fractional parts of the P partial
// ranks' (t - a) / c: about P / 2, spread ~sqrt(P / 12). Aiming that much above B, less three
// spreads, lands the first probe just below B (D = B - count(lo) small), which keeps the listing
// and the selections short. Once a probe lands above B, aim at B - 0.5 instead: the count never
// exceeds the relaxation, so that cannot overshoot.
double NewtonTarget(int64_t batch, int64_t partial, bool overshot) {
  double p = static_cast<double>(partial);
  double lift = overshot ? 0.0 : std::max(0.0, p / 2 - 3 * std::sqrt(p / 12));
  return static_cast<double>(batch) - 0.5 + lift;
}

}  // namespace

Result<std::vector<int64_t>> SolveShares(int64_t batch, std::span<const RankFit> ranks) {
  HETRUN_RETURN_IF_ERROR(CheckInputs(batch, ranks));
  const size_t num_ranks = ranks.size();
  std::vector<int64_t> shares(num_ranks, 0);
  if (batch == 0) return shares;

  Workspace* ws = ThreadWorkspace();
  std::vector<Line>& lines = ws->lines;
  const LineSums sums = BuildLines(batch, ranks, lines);
  if (sums.room < batch) {
    return InvalidArgumentError("tuner: infeasible: the ranks' caps hold " +
                                std::to_string(sums.room) +
                                " samples per iteration, the batch is " + std::to_string(batch));
  }
  // Every value is > 0 (a >= 0, c * k > 0), so count(0) = 0; count(max value) = room >= B.
  Bracket b{0, sums.hi, 0, sums.room};
  std::vector<int64_t>& counts_lo = ws->counts_lo;
  std::vector<int64_t>& counts = ws->counts;
  counts_lo.assign(num_ranks, 0);
  counts.resize(num_ranks);
  const auto limit =
      static_cast<size_t>(kSlackPerRank * static_cast<int64_t>(num_ranks) + kSlackFixed);
  bool overshot = false;
  int64_t active = 0;
  for (const Line& line : lines) active += line.cap > 0 ? 1 : 0;
  // The water level with no cap or a_r > T binding.
  double t = (NewtonTarget(batch, active, overshot) + sums.sum_a_over_c) / sums.sum_inv_c;
  bool lo_improved = false;
  for (int step = 0;; ++step) {
    if (lo_improved) {
      lo_improved = false;
      HETRUN_ASSIGN_OR_RETURN(bool done, TightenFromBelow(lines, batch, limit, ws, b, shares));
      if (done) return shares;
    }
    if (b.count_hi >= 0 && b.count_hi - b.count_lo <= static_cast<int64_t>(limit)) {
      if (!ListBetween(lines, counts_lo, b.hi, limit, ws->values)) {
        return InternalError("tuner: solver listed more values than counted");
      }
      double last = NthSmallest(ws->values, batch - b.count_lo);
      HETRUN_RETURN_IF_ERROR(TakeUpTo(lines, counts_lo, last, false, batch, counts, shares));
      return shares;
    }
    double mid = MidpointInUlps(b.lo, b.hi);
    if (!(mid > b.lo && mid < b.hi)) {  // adjacent doubles: every value in (lo, hi] equals hi
      HETRUN_RETURN_IF_ERROR(TakeUpTo(lines, counts_lo, b.hi, true, batch, counts, shares));
      return shares;
    }
    if (!(step < kNewtonSteps && t > b.lo && t < b.hi)) t = mid;
    Probe p = Evaluate(lines, t, counts);
    if (p.count == batch) {  // every value <= t, exactly B of them
      for (size_t r = 0; r < num_ranks; ++r) shares[r] = counts[r];
      return shares;
    }
    if (p.count < batch) {
      b.lo = t;
      b.count_lo = p.count;
      counts_lo.swap(counts);
      lo_improved = true;
    } else {
      b.hi = t;
      b.count_hi = p.count;
      overshot = true;
    }
    double target = NewtonTarget(batch, p.partial, overshot);
    t = p.slope > 0 ? t + (target - p.relaxed) / p.slope : mid;
  }
}

}  // namespace hetrun::tuner

// Fail-slow detection: each rank against its model's median and its own normalised history.
#include "hetrun/tuner/fail_slow.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hetrun::tuner {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

int64_t MedianShare(std::vector<int64_t> shares) {
  std::sort(shares.begin(), shares.end());
  const size_t mid = shares.size() / 2;
  return shares.size() % 2 ? shares[mid] : (shares[mid - 1] + shares[mid]) / 2;
}

bool Fitted(const RankFit& fit) {
  return fit.c_ms > 0 && std::isfinite(fit.c_ms);
}

// Per model: the ranks (fitted ones) and the median share they were measured at.
struct Family {
  std::vector<size_t> ranks;
  int64_t reference = 0;
};

std::map<std::string, Family> Families(std::span<const std::string> families,
                                       std::span<const RankFit> fits) {
  std::map<std::string, Family> out;
  for (size_t r = 0; r < fits.size(); ++r) {
    // A rank of unknown model has no peers: it is a group of its own (its history judges it).
    const std::string key = families[r].empty() ? "\x01unknown " + std::to_string(r) : families[r];
    if (Fitted(fits[r])) out[key].ranks.push_back(r);
  }
  for (auto& [name, family] : out) {
    std::vector<int64_t> shares;
    for (size_t r : family.ranks) shares.push_back(fits[r].n);
    family.reference = MedianShare(shares);
  }
  return out;
}

}  // namespace

Status ValidateFailSlowOptions(const FailSlowOptions& o) {
  if (!(o.threshold > 0 && o.threshold <= 10)) {
    return InvalidArgumentError("fail-slow: the threshold must be in (0, 10], got " +
                                std::to_string(o.threshold));
  }
  if (o.windows < 1 || o.windows > 1000) {
    return InvalidArgumentError("fail-slow: windows (K) must be in [1, 1000], got " +
                                std::to_string(o.windows));
  }
  if (o.min_history < 1 || o.history < o.min_history || o.history > 64) {
    return InvalidArgumentError("fail-slow: needs 1 <= min_history <= history <= 64");
  }
  return Status::Ok();
}

Result<FailSlowDetector> FailSlowDetector::Create(FailSlowOptions options) {
  HETRUN_RETURN_IF_ERROR(ValidateFailSlowOptions(options));
  return FailSlowDetector(options);
}

// The history comparison: each rank's change against those of its accepted fits measured near
// its family's reference share (within a factor of 4: the fits are local lines), over the
// group's median change. Only a rank alone in its family gets a history ratio: within a family
// the family median is the comparison, and a cause that hits the whole family flags nobody.
void FailSlowDetector::CompareWithHistory(std::span<const std::string> families,
                                          std::span<const RankFit> fits,
                                          std::vector<FailSlowVerdict>& out) const {
  (void)families;
  std::vector<double> change(fits.size(), 0);
  std::vector<double> all;
  for (size_t r = 0; r < fits.size(); ++r) {
    if (!Fitted(fits[r])) continue;
    const int64_t n = out[r].reference_samples;
    const int64_t near = std::max<int64_t>(n, 1);
    std::vector<double> past;
    for (const RankFit& old : ranks_[r].history) {
      if (4 * old.n >= near && old.n <= 4 * near) past.push_back(PredictedMs(old, n));
    }
    if (static_cast<int64_t>(past.size()) < options_.min_history) continue;
    // The upper envelope of the accepted lines at n: each is a local line (a tangent of a
    // convex cost: knees, steeper slopes past a memory threshold), which reads a convex cost
    // low away from where it was measured, and a line fitted at a share far from n carries its
    // slope's error there. The highest reading is the closest to the true cost; a rank slower
    // by more than the threshold is still above every one of them.
    const double baseline = *std::max_element(past.begin(), past.end());
    if (!(baseline > 0)) continue;
    change[r] = PredictedMs(fits[r], n) / baseline;
    all.push_back(change[r]);
  }
  const double job_change = Median(all);
  for (size_t r = 0; r < fits.size(); ++r) {
    if (change[r] <= 0 || out[r].family_ratio != 0 || !(job_change > 0)) continue;
    FailSlowVerdict& v = out[r];
    v.history_ratio = change[r] / job_change;
    v.ratio = v.history_ratio;
    v.expected_ms = v.measured_ms / v.history_ratio;
    v.basis = "history";
  }
}

// Streaks, verdicts and which windows join each rank's history.
void FailSlowDetector::Conclude(std::span<const RankFit> fits, std::vector<FailSlowVerdict>& out) {
  const double limit = 1 + options_.threshold;
  for (size_t r = 0; r < fits.size(); ++r) {
    RankState& state = ranks_[r];
    FailSlowVerdict& v = out[r];
    if (!Fitted(fits[r])) {
      v.streak = state.streak;
      continue;
    }
    const bool slow = v.family_ratio > limit || v.history_ratio > limit;
    const bool compared = v.family_ratio > 0 || v.history_ratio > 0;
    if (!compared && state.streak > 0) {
      // No comparison this window (a lone rank whose share moved away from its history): the
      // streak holds, and a suspect rank's window stays out of its baseline.
      v.streak = state.streak;
      v.fail_slow = state.streak >= options_.windows;
      continue;
    }
    state.streak = slow ? state.streak + 1 : 0;
    v.streak = state.streak;
    v.fail_slow = state.streak >= options_.windows;
    v.reported = state.streak == options_.windows;
    if (!slow) {
      state.history.push_back(fits[r]);
      if (static_cast<int64_t>(state.history.size()) > options_.history) {
        state.history.pop_front();
      }
    }
  }
}

Result<std::vector<FailSlowVerdict>> FailSlowDetector::Update(std::span<const std::string> families,
                                                              std::span<const RankFit> fits) {
  if (families.size() != fits.size()) {
    return InvalidArgumentError("fail-slow: " + std::to_string(families.size()) + " families for " +
                                std::to_string(fits.size()) + " fits");
  }
  if (ranks_.empty()) ranks_.resize(fits.size());
  if (ranks_.size() != fits.size()) {
    return InvalidArgumentError("fail-slow: the group changed from " +
                                std::to_string(ranks_.size()) + " to " +
                                std::to_string(fits.size()) + " ranks");
  }
  std::vector<FailSlowVerdict> out(fits.size());
  for (const auto& [name, family] : Families(families, fits)) {
    std::vector<double> times;
    for (size_t r : family.ranks) times.push_back(PredictedMs(fits[r], family.reference));
    const double median = Median(times);
    for (size_t i = 0; i < family.ranks.size(); ++i) {
      FailSlowVerdict& v = out[family.ranks[i]];
      v.reference_samples = family.reference;
      v.measured_ms = times[i];
      if (family.ranks.size() < 2 || !(median > 0)) continue;
      v.family_ratio = times[i] / median;
      v.ratio = v.family_ratio;
      v.expected_ms = median;
      v.basis = "model";
    }
  }
  CompareWithHistory(families, fits, out);
  Conclude(fits, out);
  return out;
}

}  // namespace hetrun::tuner

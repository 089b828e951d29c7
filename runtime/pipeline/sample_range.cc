#include "hetrun/pipeline/sample_range.h"

#include <algorithm>
#include <cmath>

namespace hetrun::pipeline {

std::string SampleRange::ToString() const {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

SampleRange Overlap(const SampleRange& a, const SampleRange& b) {
  SampleRange out{std::max(a.begin, b.begin), std::min(a.end, b.end)};
  if (out.end < out.begin) out.end = out.begin;
  return out;
}

Result<std::vector<SampleRange>> SplitBatch(int64_t batch, int64_t micro_batches) {
  if (micro_batches < 1 || micro_batches > batch) {
    return InvalidArgumentError("cannot cut a batch of " + std::to_string(batch) +
                                " samples into " + std::to_string(micro_batches) +
                                " micro-batches (need 1 <= micro-batches <= batch)");
  }
  std::vector<SampleRange> out;
  int64_t base = batch / micro_batches;
  int64_t larger = batch % micro_batches;
  int64_t begin = 0;
  for (int64_t m = 0; m < micro_batches; ++m) {
    int64_t size = base + (m < larger ? 1 : 0);
    out.push_back({begin, begin + size});
    begin += size;
  }
  return out;
}

namespace {

// Index of the best candidate by `better` (first wins ties), or -1.
template <typename Eligible, typename Key>
int BestIndex(size_t n, Eligible eligible, Key key) {
  int best = -1;
  for (size_t i = 0; i < n; ++i) {
    if (!eligible(i)) continue;
    if (best < 0 || key(i) > key(static_cast<size_t>(best))) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace

Result<std::vector<SampleRange>> SplitByShares(const SampleRange& range,
                                               std::span<const double> shares, int64_t min_share) {
  if (shares.empty()) return InvalidArgumentError("no shares to split " + range.ToString() + " by");
  if (min_share < 0) return InvalidArgumentError("a minimum share must not be negative");
  double total = 0;
  for (double s : shares) {
    if (!std::isfinite(s) || s <= 0) {
      return InvalidArgumentError("share " + std::to_string(s) + " is not positive and finite");
    }
    total += s;
  }
  const int64_t n = range.size();
  const auto d = static_cast<int64_t>(shares.size());
  if (n < d * min_share) {
    return InvalidArgumentError("a micro-batch of " + std::to_string(n) + " samples cannot give " +
                                std::to_string(d) + " replicas " + std::to_string(min_share) +
                                " samples each (needs at least " + std::to_string(d * min_share) +
                                ")");
  }
  std::vector<double> ideal(shares.size());
  std::vector<int64_t> count(shares.size());
  int64_t sum = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    ideal[i] = static_cast<double>(n) * shares[i] / total;
    count[i] = std::max<int64_t>(min_share, static_cast<int64_t>(std::floor(ideal[i])));
    sum += count[i];
  }
  auto excess = [&](size_t i) { return static_cast<double>(count[i]) - ideal[i]; };
  while (sum > n) {  // take from the piece furthest above its ideal that can give
    int i = BestIndex(
        count.size(), [&](size_t k) { return count[k] > min_share; }, excess);
    --count[static_cast<size_t>(i)];
    --sum;
  }
  while (sum < n) {  // give to the piece furthest below its ideal
    int i = BestIndex(
        count.size(), [](size_t) { return true; }, [&](size_t k) { return -excess(k); });
    ++count[static_cast<size_t>(i)];
    ++sum;
  }
  std::vector<SampleRange> out;
  int64_t begin = range.begin;
  for (int64_t c : count) {
    out.push_back({begin, begin + c});
    begin += c;
  }
  return out;
}

}  // namespace hetrun::pipeline

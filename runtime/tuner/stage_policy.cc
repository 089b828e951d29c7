// hetrun's controller and the fixed splits as simulator policies; the proportional split.
#include "hetrun/tuner/stage_policy.h"

#include <algorithm>
#include <cmath>

namespace hetrun::tuner {
namespace {

// On real ranks each rank holds a replica of the ShareController, fed the same all-gathered
// bytes; here one instance decides for the group.
class HetrunPolicy : public StagePolicy {
 public:
  HetrunPolicy(ShareController group, std::vector<int64_t> caps, CostModelOptions model,
               std::span<const int32_t> families)
      : group_(std::move(group)), caps_(std::move(caps)) {
    observers_.reserve(caps_.size());
    for (size_t r = 0; r < caps_.size(); ++r) {
      observers_.emplace_back(model, r < families.size() ? families[r] : 0);
    }
  }
  const std::vector<int64_t>& shares() const override { return group_.shares(); }
  Status Observe(size_t rank, double measured_ms) override {
    return observers_[rank].Record(group_.shares()[rank], measured_ms);
  }
  Status EndWindow() override {
    gathered_.clear();
    gathered_.reserve(observers_.size());
    for (size_t r = 0; r < observers_.size(); ++r) {
      gathered_.push_back(observers_[r].CloseWindow(caps_[r], group_.shares()[r]));
    }
    return group_.Decide(gathered_).status();
  }
  std::span<const RankFit> last_fits() const override { return gathered_; }

 private:
  ShareController group_;
  std::vector<int64_t> caps_;
  std::vector<RankObserver> observers_;
  std::vector<RankFit> gathered_;
};

class StaticPolicy : public StagePolicy {
 public:
  explicit StaticPolicy(std::vector<int64_t> shares) : shares_(std::move(shares)) {}
  const std::vector<int64_t>& shares() const override { return shares_; }
  Status Observe(size_t, double) override { return Status::Ok(); }
  Status EndWindow() override { return Status::Ok(); }

 private:
  std::vector<int64_t> shares_;
};

}  // namespace

std::unique_ptr<StagePolicy> MakeHetrunPolicy(ShareController group, std::vector<int64_t> caps,
                                              CostModelOptions model,
                                              std::vector<int32_t> families) {
  return std::make_unique<HetrunPolicy>(std::move(group), std::move(caps), model, families);
}

std::unique_ptr<StagePolicy> MakeStaticPolicy(std::vector<int64_t> shares) {
  return std::make_unique<StaticPolicy>(std::move(shares));
}

std::vector<int64_t> ProportionalSplit(int64_t batch, std::span<const double> weights,
                                       std::span<const int64_t> caps) {
  const size_t n = weights.size();
  std::vector<int64_t> shares(n, 0);
  std::vector<bool> capped(n, false);
  std::vector<double> ideal(n, 0);
  // Water-filling: ranks whose part exceeds their cap take the cap; the rest is re-split.
  for (bool again = true; again;) {
    again = false;
    int64_t left = batch;
    double weight = 0;
    for (size_t r = 0; r < n; ++r) {
      if (capped[r]) {
        left -= caps[r];
      } else {
        weight += std::max(0.0, weights[r]);
      }
    }
    for (size_t r = 0; r < n; ++r) {
      if (capped[r]) continue;
      ideal[r] = weight > 0 ? static_cast<double>(left) * std::max(0.0, weights[r]) / weight : 0;
      if (ideal[r] > static_cast<double>(caps[r])) {
        capped[r] = true;
        again = true;
      }
    }
  }
  int64_t given = 0;
  std::vector<std::pair<double, size_t>> remainders;
  for (size_t r = 0; r < n; ++r) {
    shares[r] = capped[r] ? caps[r] : std::min(caps[r], static_cast<int64_t>(ideal[r]));
    given += shares[r];
    if (!capped[r]) remainders.push_back({ideal[r] - static_cast<double>(shares[r]), r});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  // Largest remainder first; rounding can leave more than one sample over (or a rank whose
  // weight is 0), so keep cycling through the ranks with room.
  while (given < batch && !remainders.empty()) {
    bool moved = false;
    for (const auto& [remainder, r] : remainders) {
      if (given == batch) break;
      if (shares[r] < caps[r]) {
        ++shares[r];
        ++given;
        moved = true;
      }
    }
    if (!moved) break;
  }
  return shares;
}

}  // namespace hetrun::tuner

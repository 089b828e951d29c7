// The throughput-proportional baseline: every window, shares proportional to share / median time.
#include <algorithm>

#include "hetrun/tuner/cost_model.h"
#include "hetrun/tuner/stage_policy.h"

namespace hetrun::tuner {
namespace {

class ProportionalPolicy : public StagePolicy {
 public:
  ProportionalPolicy(std::vector<int64_t> shares, std::vector<int64_t> caps)
      : shares_(std::move(shares)),
        caps_(std::move(caps)),
        throughput_(shares_.size(), 0),
        window_(shares_.size()) {}
  const std::vector<int64_t>& shares() const override { return shares_; }
  Status Observe(size_t rank, double measured_ms) override {
    window_[rank].push_back({shares_[rank], measured_ms});
    return Status::Ok();
  }
  Status EndWindow() override {
    int64_t batch = 0;
    double least = 0;
    for (size_t r = 0; r < shares_.size(); ++r) {
      batch += shares_[r];
      std::vector<WindowPoint> points = SummarizeWindow(window_[r]);
      window_[r].clear();
      // A rank without samples shows no throughput: it keeps its last estimate.
      if (!points.empty() && shares_[r] > 0) {
        throughput_[r] = static_cast<double>(shares_[r]) / points.back().median_ms;
      }
      if (throughput_[r] > 0) least = least > 0 ? std::min(least, throughput_[r]) : throughput_[r];
    }
    std::vector<double> weights(throughput_);
    // A rank never measured with samples is tried at the slowest measured rate.
    for (double& w : weights) w = w > 0 ? w : least;
    if (least > 0) shares_ = ProportionalSplit(batch, weights, caps_);
    return Status::Ok();
  }

 private:
  std::vector<int64_t> shares_;
  std::vector<int64_t> caps_;
  std::vector<double> throughput_;  // samples per ms, 0 = never measured with samples
  std::vector<std::vector<Observation>> window_;
};

}  // namespace

std::unique_ptr<StagePolicy> MakeProportionalPolicy(std::vector<int64_t> initial,
                                                    std::vector<int64_t> caps) {
  return std::make_unique<ProportionalPolicy>(std::move(initial), std::move(caps));
}

}  // namespace hetrun::tuner

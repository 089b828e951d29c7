// LBB's online rule (Yao et al., J. Supercomputing 2024), as its public LBB.py applies it after
// every iteration: the straggle level of the iteration's compute times picks between holding, one
// sample from the slowest to the fastest rank, and a re-solve of its linear model.
#include <algorithm>

#include "hetrun/tuner/solver.h"
#include "hetrun/tuner/stage_policy.h"

namespace hetrun::tuner {
namespace {

class LbbPolicy : public StagePolicy {
 public:
  LbbPolicy(std::vector<int64_t> shares, std::vector<int64_t> caps, std::vector<double> startup)
      : shares_(std::move(shares)),
        caps_(std::move(caps)),
        startup_(std::move(startup)),
        per_sample_(shares_.size(), 0),
        times_(shares_.size(), 0) {}
  const std::vector<int64_t>& shares() const override { return shares_; }
  Status Observe(size_t rank, double measured_ms) override {
    times_[rank] = measured_ms;
    return Status::Ok();
  }
  Status EndWindow() override { return Status::Ok(); }
  Status EndIteration() override {
    if (cooldown_ > 0) --cooldown_;
    double lo = times_[0], hi = times_[0], sum = 0;
    for (double t : times_) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
      sum += t;
    }
    const double straggle = (hi - lo) / (sum / static_cast<double>(times_.size()));
    if (straggle <= kLbbQuiet) return Status::Ok();
    if (straggle <= kLbbResolve || cooldown_ > 0) {
      MoveOneSample();
      return Status::Ok();
    }
    cooldown_ = kLbbCooldown;
    return Resolve();
  }

 private:
  void MoveOneSample() {
    size_t none = shares_.size(), slow = none, fast = none;
    for (size_t r = 0; r < shares_.size(); ++r) {
      if (shares_[r] > 0 && (slow == none || times_[r] > times_[slow])) slow = r;
      if (shares_[r] < caps_[r] && (fast == none || times_[r] < times_[fast])) fast = r;
    }
    if (slow != none && fast != none && slow != fast) {
      --shares_[slow];
      ++shares_[fast];
    }
  }

  // t = startup + n / throughput, throughput = n / (t - startup); a rank without samples (or
  // whose time does not exceed its start-up) keeps its last per-sample time.
  Status Resolve() {
    std::vector<RankFit> fits;
    int64_t batch = 0;
    for (size_t r = 0; r < shares_.size(); ++r) {
      batch += shares_[r];
      if (shares_[r] > 0 && times_[r] > startup_[r]) {
        per_sample_[r] = (times_[r] - startup_[r]) / static_cast<double>(shares_[r]);
      }
      if (per_sample_[r] <= 0) per_sample_[r] = times_[r] / static_cast<double>(shares_[r] + 1);
      fits.push_back({startup_[r], per_sample_[r], caps_[r], shares_[r]});
    }
    HETRUN_ASSIGN_OR_RETURN(shares_, SolveShares(batch, fits));
    return Status::Ok();
  }

  std::vector<int64_t> shares_;
  std::vector<int64_t> caps_;
  std::vector<double> startup_;
  std::vector<double> per_sample_;  // ms per sample from the last re-solve
  std::vector<double> times_;       // this iteration's measured times
  int64_t cooldown_ = 0;            // iterations left in the cool-down after a re-solve
};

}  // namespace

std::unique_ptr<StagePolicy> MakeLbbPolicy(std::vector<int64_t> initial, std::vector<int64_t> caps,
                                           std::vector<double> startup_ms) {
  return std::make_unique<LbbPolicy>(std::move(initial), std::move(caps), std::move(startup_ms));
}

}  // namespace hetrun::tuner

#include "hetrun/job/compute_stretch.h"

#include <algorithm>

namespace hetrun {

void ComputeStretch::SetFactors(double whole, double per_sample) {
  whole_ = std::max(whole, 1.0);
  per_sample_ = std::max(per_sample, 1.0);
}

double ComputeStretch::TargetSeconds(double real_s, int64_t samples) const {
  if (!per_sample_s_) return whole_ * per_sample_ * real_s;
  const double per_sample_part =
      *per_sample_s_ * static_cast<double>(std::max<int64_t>(samples, 0));
  const double fitted = *fixed_s_ + per_sample_part;
  const double done = fitted > 0 ? std::min(1.0, real_s / fitted) : 1.0;
  return whole_ * (real_s + (per_sample_ - 1.0) * per_sample_part * done);
}

void ComputeStretch::Observe(int64_t samples, double real_s) {
  history_.emplace_back(samples, real_s);
  if (history_.size() > kHistory) history_.pop_front();
  Fit();
}

void ComputeStretch::Fit() {
  const double n = static_cast<double>(history_.size());
  double sum_x = 0, sum_y = 0;
  for (const auto& [samples, seconds] : history_) {
    sum_x += static_cast<double>(samples);
    sum_y += seconds;
  }
  const double mean_x = sum_x / n, mean_y = sum_y / n;
  double sxx = 0, sxy = 0;
  for (const auto& [samples, seconds] : history_) {
    const double dx = static_cast<double>(samples) - mean_x;
    sxx += dx * dx;
    sxy += dx * (seconds - mean_y);
  }
  if (sxx <= 0) return;  // one distinct count: c and b x n cannot be told apart; keep the last fit
  per_sample_s_ = std::max(sxy / sxx, 0.0);
  fixed_s_ = std::max(mean_y - *per_sample_s_ * mean_x, 0.0);
}

}  // namespace hetrun

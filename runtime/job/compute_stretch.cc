#include "hetrun/job/compute_stretch.h"

#include <algorithm>

namespace hetrun {

void ComputeStretch::SetFactors(double whole, double per_sample) {
  whole_ = std::max(whole, 1.0);
  per_sample_ = std::max(per_sample, 1.0);
}

double ComputeStretch::TargetSeconds(double real_s) const {
  const double fixed = std::min(real_s, fixed_s_.value_or(0.0));
  return whole_ * (fixed + per_sample_ * (real_s - fixed));
}

void ComputeStretch::Observe(int64_t samples, double real_s) {
  history_.emplace_back(samples, real_s);
  if (history_.size() > kHistory) history_.pop_front();
  Fit();
}

void ComputeStretch::Fit() {
  const double n = static_cast<double>(history_.size());
  double sum_x = 0, sum_y = 0, shortest = history_.front().second;
  for (const auto& [samples, seconds] : history_) {
    sum_x += static_cast<double>(samples);
    sum_y += seconds;
    shortest = std::min(shortest, seconds);
  }
  const double mean_x = sum_x / n, mean_y = sum_y / n;
  double sxx = 0, sxy = 0;
  for (const auto& [samples, seconds] : history_) {
    const double dx = static_cast<double>(samples) - mean_x;
    sxx += dx * dx;
    sxy += dx * (seconds - mean_y);
  }
  if (sxx <= 0) return;  // one distinct count: c and b x n cannot be told apart; keep the last c
  const double intercept = mean_y - (sxy / sxx) * mean_x;
  fixed_s_ = std::clamp(intercept, 0.0, std::max(shortest, 0.0));
}

}  // namespace hetrun

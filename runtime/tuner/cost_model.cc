// Per-rank cost model: window medians, weighted least squares with forgetting, change detection.
#include "hetrun/tuner/cost_model.h"

#include <algorithm>
#include <cmath>

namespace hetrun::tuner {
namespace {

double MedianOfSorted(const std::vector<double>& sorted) {
  size_t n = sorted.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

constexpr double kMinWeight = 0.05;

}  // namespace

std::vector<WindowPoint> SummarizeWindow(std::span<const Observation> observations) {
  std::vector<Observation> sorted(observations.begin(), observations.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const Observation& x, const Observation& y) {
    return x.samples < y.samples || (x.samples == y.samples && x.compute_ms < y.compute_ms);
  });
  std::vector<WindowPoint> points;
  size_t i = 0;
  while (i < sorted.size()) {
    size_t j = i;
    std::vector<double> ms;
    while (j < sorted.size() && sorted[j].samples == sorted[i].samples)
      ms.push_back(sorted[j++].compute_ms);
    WindowPoint p;
    p.samples = sorted[i].samples;
    p.count = static_cast<int64_t>(ms.size());
    p.median_ms = MedianOfSorted(ms);
    std::vector<double> dev;
    dev.reserve(ms.size());
    for (double m : ms) dev.push_back(std::fabs(m - p.median_ms));
    std::sort(dev.begin(), dev.end());
    p.sigma_ms = ms.size() < 2 ? 0
                               : 1.2533 * 1.4826 * MedianOfSorted(dev) /
                                     std::sqrt(static_cast<double>(ms.size()));
    points.push_back(p);
    i = j;
  }
  return points;
}

CostModel::CostModel(CostModelOptions options) : options_(options) {}

double CostModel::Predict(int64_t samples) const {
  return has_fit_ ? a_ + c_ * static_cast<double>(samples) : 0;
}

bool CostModel::AddPoint(const WindowPoint& point) {
  bool change = false;
  // A miss is a speed change only where the model is trusted: a least-squares line, or the same
  // operating point as the last window. A proportional guess extrapolated to a new sample count
  // is expected to miss (that miss is how the fixed time is learnt).
  // A least-squares line is trusted only near the sample counts it was fitted on: far outside
  // them a noisy slope extrapolates badly, and its miss is not evidence of a speed change.
  bool trusted = false;
  if (from_least_squares_ && !points_.empty()) {
    int64_t lo = points_.front().samples, hi = points_.front().samples;
    for (const Weighted& p : points_) {
      lo = std::min(lo, p.samples);
      hi = std::max(hi, p.samples);
    }
    const double slack = options_.min_relative_spread;
    const double n = static_cast<double>(point.samples);
    trusted = n >= static_cast<double>(lo) * (1.0 - slack) &&
              n <= static_cast<double>(hi) * (1.0 + slack);
  }
  if (!points_.empty()) {
    int64_t last = points_.back().samples;
    double gap = static_cast<double>(std::max(last, point.samples) - std::min(last, point.samples));
    trusted = trusted || gap <= options_.min_relative_spread *
                                    static_cast<double>(std::max(last, point.samples));
  }
  if (has_fit_ && trusted) {
    double predicted = Predict(point.samples);
    if (predicted > 0) {
      double deviation = std::fabs(point.median_ms - predicted) / predicted;
      double threshold =
          std::max(options_.change_floor, options_.change_sigmas * point.sigma_ms / predicted);
      change = deviation > threshold;
    }
  }
  if (change) {
    points_.clear();
    shape_a_ = a_;
    shape_c_ = c_;
    has_shape_ = true;
  }
  for (Weighted& w : points_) w.weight *= options_.forgetting;
  points_.push_back({point.samples, point.median_ms, 1.0, point.sigma_ms});
  if (static_cast<int>(points_.size()) > options_.max_points) points_.erase(points_.begin());
  Refit();
  return change;
}

void CostModel::FitShape(double mean_n, double mean_t) {
  if (has_shape_) {
    double base = shape_a_ + shape_c_ * mean_n;
    if (base > 0) {
      double scale = mean_t / base;
      a_ = shape_a_ * scale;
      c_ = shape_c_ * scale;
    } else {  // shape through the origin and only n = 0 seen: the fixed time is what we saw
      a_ = mean_t;
      c_ = shape_c_;
    }
  } else if (mean_n > 0) {
    a_ = 0;
    c_ = mean_t / mean_n;
  } else {
    a_ = mean_t;
    c_ = mean_t;
  }
  has_fit_ = true;
}

double CostModel::SlopeSigma(double mean_n, double sxx) const {
  const double now = static_cast<double>(points_.back().samples);
  const double width = options_.local_width * std::max(now, 1.0);
  double var = 0;
  for (const Weighted& p : points_) {
    const double n = static_cast<double>(p.samples);
    const double d = (n - now) / width;
    const double w = p.weight * std::exp(-0.5 * d * d);
    var += w * w * (n - mean_n) * (n - mean_n) * p.sigma_ms * p.sigma_ms;
  }
  return sxx > 0 ? std::sqrt(var) / sxx : 0;
}

void CostModel::Refit() {
  const double now = static_cast<double>(points_.back().samples);
  const double width = options_.local_width * std::max(now, 1.0);
  double sw = 0, sn = 0, st = 0, snn = 0, snt = 0, noise = 0;
  int64_t min_n = 0, max_n = 0;
  bool first = true;
  for (const Weighted& p : points_) {
    const double n = static_cast<double>(p.samples);
    const double d = (n - now) / width;
    const double w = p.weight * std::exp(-0.5 * d * d);
    sw += w;
    sn += w * n;
    st += w * p.ms;
    snn += w * n * n;
    snt += w * n * p.ms;
    noise += w * w * p.sigma_ms * p.sigma_ms;
    if (w < kMinWeight) continue;
    min_n = first ? p.samples : std::min(min_n, p.samples);
    max_n = first ? p.samples : std::max(max_n, p.samples);
    first = false;
  }
  from_least_squares_ = false;
  if (sw <= 0) return;
  sigma_ = std::sqrt(noise) / sw;
  const double mean_n = sn / sw;
  const double mean_t = st / sw;
  const bool spread =
      max_n > min_n && static_cast<double>(max_n - min_n) >=
                           options_.min_relative_spread * static_cast<double>(max_n);
  // Centred sums: the weighted least-squares slope, numerically stable.
  const double var_n = snn / sw - mean_n * mean_n;
  const double cov = snt / sw - mean_n * mean_t;
  if (spread && var_n > 0) {
    // A slope <= 0 (noise, or a flat stretch) is taken as flat, then bounded below as any slope.
    double c = std::max(0.0, cov / var_n);
    const double level = mean_t + c * (now - mean_n);  // the local line at the current share
    // A slope read from a short, noisy secant errs both ways; too low a slope hands the rank far
    // too many samples. Use the slope plus slope_sigmas of its standard error: a smaller, safer
    // move (the line still passes through the level, so the fixed point is unchanged).
    const double slope_sigma = SlopeSigma(mean_n, sw * var_n);
    c += options_.slope_sigmas * slope_sigma;
    // The level at the current share is the weighted mean moved along the slope: its error adds
    // the slope's error times the distance from the points' mean sample count.
    sigma_ = std::hypot(sigma_, (now - mean_n) * slope_sigma);
    // A nearly flat local slope (an under-filled GPU below its knee) is mostly noise, and a
    // solver extrapolating it hands that rank far too much: bound it below.
    if (now > 0) c = std::max(c, options_.min_slope_fraction * level / now);
    double a = level - c * now;
    if (a >= 0) {
      a_ = a;
      c_ = c;
      from_least_squares_ = true;
    } else {  // through the origin and the level: the value at the current share stays exact
      a_ = 0;
      c_ = now > 0 ? level / now : c;
    }
    has_fit_ = true;
    shape_a_ = a_;
    shape_c_ = c_;
    has_shape_ = true;
    return;
  }
  FitShape(mean_n, mean_t);
}

}  // namespace hetrun::tuner

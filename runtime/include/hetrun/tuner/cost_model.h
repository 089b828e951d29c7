// Per-rank cost model t(n) = a + c * n (milliseconds for n samples), fitted from measured
// compute times. docs/ARCHITECTURE.md §5: median per window, least squares with exponential
// forgetting.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::tuner {

/// One iteration's measurement on one rank.
struct Observation {
  int64_t samples = 0;    ///< samples the rank processed in the iteration
  double compute_ms = 0;  ///< its compute time (up to its last gradient bucket), > 0
};

/// A window's robust summary for one distinct sample count: the median, which ignores a minority
/// of outliers (a ×10 hiccup), and the median's standard error estimated from the MAD.
struct WindowPoint {
  int64_t samples = 0;
  double median_ms = 0;
  double sigma_ms = 0;  ///< 1.2533 * 1.4826 * MAD / sqrt(count); 0 for a single observation
  int64_t count = 0;
};

/// One point per distinct sample count, in increasing sample order. Medians of an even count are
/// the mean of the two middle values. Observations must be valid (see RankObserver::Record).
std::vector<WindowPoint> SummarizeWindow(std::span<const Observation> observations);

struct CostModelOptions {
  /// Weight a window point keeps per later window (exponential forgetting), in (0, 1].
  /// 0.9 (~19 effective windows, half-life ~6.6): an abrupt change of speed is caught by the change
  /// detection below, which drops the history at once, so the memory only has to follow slow drift;
  /// while speeds are stationary a long memory averages the window medians' noise down (at 10%
  /// per-iteration noise a window median is off by ~4%; 0.8 keeps ~9 effective windows, 0.9 cuts
  /// the fit's error by ~1.45x and the share changes it causes by about half).
  double forgetting = 0.9;
  /// Points older than this many windows are dropped (their weight is negligible anyway).
  int max_points = 24;
  /// The least-squares line is used only when the sample counts (of points with weight >= 0.05)
  /// spread by at least this fraction of the largest; otherwise the slope is not identifiable
  /// from the noise and the model keeps its last shape, rescaled through the data (below).
  double min_relative_spread = 0.15;
  /// A window median further than max(change_floor, change_sigmas * sigma / predicted) from the
  /// model's prediction (relative), where the model is trusted (a least-squares line, or the
  /// same sample count as the last window, within min_relative_spread), is a change of speed: the
  /// history is dropped and the last shape is rescaled through the new point, so a rank slowed 2x
  /// is modelled 2x at once.
  double change_sigmas = 5;
  double change_floor = 0.08;
  /// Local fit: a point's weight is multiplied by exp(-d^2 / 2) with d = |n - n_now| /
  /// (local_width * n_now), n_now the latest window's sample count. True times are not lines
  /// (an under-filled GPU is flat below a knee, recomputation steepens the slope past a memory
  /// threshold): what the solver needs is the value and slope AT the current share, and a line
  /// through far-away points would bias both.
  double local_width = 0.3;
  /// The fitted slope is at least this fraction of the time per sample at the current share
  /// (t(n) / n). Below a knee the true slope is nearly 0 and its estimate mostly noise; a solver
  /// extrapolating a near-zero slope sends a rank far past its knee, so the slope is bounded.
  double min_slope_fraction = 0.5;
  /// The slope used is the fitted one plus this many of its standard errors (from the points'
  /// sigma_ms): a noisy secant read too low would hand a rank far too many samples.
  double slope_sigmas = 1;
};

/// The fit: a weighted least-squares line around the latest sample count (forgetting x locality
/// weights), read off at that count: level L and slope c, a = L - c n_now. Degenerate inputs:
///  - only one distinct sample count (or too little spread): keep the last shape (a, c) scaled by
///    one factor so the line passes through the weighted mean point; with no shape yet, the
///    proportional model a = 0, c = t / n. With only n = 0 seen and no shape: a = t, c = t.
///  - least squares giving a slope <= 0: the same fallback as too little spread;
///    giving an intercept < 0: the line through the origin and the level, c = L / n_now.
class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {});

  /// Adds one window's point (median_ms > 0, samples >= 0) and refits. Returns true when the
  /// point was taken as a change of speed (history dropped).
  bool AddPoint(const WindowPoint& point);

  bool has_fit() const { return has_fit_; }
  double a_ms() const { return a_; }
  double c_ms() const { return c_; }
  /// a + c * n; 0 without a fit.
  double Predict(int64_t samples) const;
  /// Standard error of Predict() at the latest sample count (ms), from the window points'
  /// sigma_ms and their weights; 0 when the points carry none.
  double sigma_ms() const { return sigma_; }

 private:
  struct Weighted {
    int64_t samples;
    double ms;
    double weight;
    double sigma_ms;
  };
  void Refit();
  double SlopeSigma(double mean_n, double sxx) const;
  void FitShape(double mean_n, double mean_t);

  CostModelOptions options_;
  std::vector<Weighted> points_;  // oldest first
  bool has_fit_ = false;
  double a_ = 0;
  double c_ = 0;
  double sigma_ = 0;
  bool has_shape_ = false;
  bool from_least_squares_ = false;  // the current fit is a well-conditioned line
  double shape_a_ = 0;               // the last well-conditioned fit, kept for rescaling
  double shape_c_ = 0;
};

}  // namespace hetrun::tuner

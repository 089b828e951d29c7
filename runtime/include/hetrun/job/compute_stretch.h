// How a CPU clock stretches a step's compute region under HETRUN_EMULATE_SLOWDOWN
// (emulated_slowdown.h, docs/ARCHITECTURE.md §5.4).
//
// A region's real time is t = c + b x n for n samples: c is the rank's fixed per-step cost (on a
// GPU: kernel launches, the optimizer step, the Python around them), b x n the per-sample part.
// A whole-region factor W stretches both; a per-sample factor S ("/sample") only b x n, as a
// slower GPU with the same host would. The stretched region takes
//     T(t) = W x (min(t, c) + S x max(t - c, 0)),
// so with S = 1 it is today's W x t, and with W = 1 it is c + S x (t - c).
//
// c is not known in advance, so the clock estimates it from its own history: an ordinary
// least-squares fit of the real (unstretched) region times against the steps' sample counts
// over the last kHistory steps, its intercept clamped to [0, the shortest real time seen]. A
// single sample count cannot separate c from b x n, so until two distinct counts were seen c is
// taken as 0: the whole region is stretched (a uniform run whose shares never change stays so).
// Steps differ in count once a tuner moves samples between ranks. When the history later holds
// one count only (shares settled for kHistory steps), the last fit stays in force.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace hetrun {

class ComputeStretch {
 public:
  static constexpr size_t kHistory = 64;  ///< steps the fit looks back over

  /// The factors in force (each >= 1): whole-region W and per-sample S.
  void SetFactors(double whole, double per_sample);
  double whole() const { return whole_; }
  double per_sample() const { return per_sample_; }
  /// True when the clock must sleep at all (W or S above 1).
  bool active() const { return whole_ > 1.0 || per_sample_ > 1.0; }

  /// The seconds a region whose real compute so far is `real_s` takes stretched, T(real_s).
  double TargetSeconds(double real_s) const;
  /// Records a finished step: its sample count and its real (unstretched) compute seconds.
  void Observe(int64_t samples, double real_s);
  /// The fitted fixed per-step cost c in seconds; nullopt before two distinct sample counts.
  std::optional<double> FixedSeconds() const { return fixed_s_; }

 private:
  void Fit();

  double whole_ = 1.0;
  double per_sample_ = 1.0;
  std::deque<std::pair<int64_t, double>> history_;  // (samples, real seconds), oldest first
  std::optional<double> fixed_s_;
};

}  // namespace hetrun

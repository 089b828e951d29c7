// How a CPU clock stretches a step's compute region under HETRUN_EMULATE_SLOWDOWN
// (emulated_slowdown.h, docs/ARCHITECTURE.md §5.4).
//
// A region's real time is t = c + b x n + e for n samples: c is the rank's fixed per-step cost
// (on a GPU: kernel launches, the optimizer step, the Python around them), b x n the per-sample
// part, e the host's noise (other processes, the scheduler). A whole-region factor W stretches
// all of it: T = W x t. A per-sample factor S ("/sample") adds what a GPU S times slower per
// sample behind the same host would add, (S - 1) x b x n, and leaves c and the noise as they are:
//     T = W x (t + (S - 1) x b x n)
// (= c + S x (t - c) when e = 0). Stretching the measured t - c instead would multiply the noise
// by S as well, which on a loaded machine is most of a small model's t - c.
//
// c and b are not known in advance, so the clock estimates them from its own history: an
// ordinary least-squares fit of the real (unstretched) region times against the steps' sample
// counts over the last kHistory steps, slope and intercept clamped to >= 0. A single sample count
// cannot separate c from b x n, so until two distinct counts were seen the whole region is
// stretched by W x S (a uniform run whose shares never change stays so). Steps differ in count
// once a tuner moves samples between ranks; when the history later holds one count only (shares
// settled for kHistory steps), the last fit stays in force.
//
// A clock with several intervals per step asks for the target of its real compute so far; the
// per-sample addition is spread in proportion to the fitted region, (S - 1) x b x n x
// min(1, t_so_far / (c + b x n)), so the step's intervals add up to T.
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

  /// The seconds a region of `samples` samples whose real compute so far is `real_s` takes
  /// stretched (see above).
  double TargetSeconds(double real_s, int64_t samples) const;
  /// Records a finished step: its sample count and its real (unstretched) compute seconds.
  void Observe(int64_t samples, double real_s);
  /// The fitted fixed per-step cost c in seconds; nullopt before two distinct sample counts.
  std::optional<double> FixedSeconds() const { return fixed_s_; }
  /// The fitted cost of one sample b in seconds; nullopt before two distinct sample counts.
  std::optional<double> PerSampleSeconds() const { return per_sample_s_; }

 private:
  void Fit();

  double whole_ = 1.0;
  double per_sample_ = 1.0;
  std::deque<std::pair<int64_t, double>> history_;  // (samples, real seconds), oldest first
  std::optional<double> fixed_s_;
  std::optional<double> per_sample_s_;
};

}  // namespace hetrun

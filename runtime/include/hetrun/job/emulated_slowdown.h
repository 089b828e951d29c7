// CPU emulation of a slower GPU (docs/ARCHITECTURE.md §5): HETRUN_EMULATE_SLOWDOWN=k makes a
// worker's compute region take k times its measured real time (the runtime sleeps the difference),
// so heterogeneity shows up in real timings. The timer still measures real elapsed time.
//
// Value grammar:
//   "3.17"                     one factor for this worker
//   "ampere=3.17,hopper=1.0"   a factor per GPU family, looked up with HETRUN_GPU_FAMILY (which
//                              `hetrun run` sets per worker from the inventory), so one variable
//                              serves a whole mixed node. "*=k" is the factor for other families.
//   "ampere=3,hopper=1,rank1=2"  rankN=k multiplies global rank N's family factor (emulating one
//                              sick GPU beside its healthy kind, docs/ARCHITECTURE.md §5.10)
//   "rank1=2.0@step30"         any factor may start at a step: @stepS applies it from step S on
//                              (0-based, steps as the tuner counts them: every step the training
//                              loop runs, warm-up included); before S the entry is absent
//   "ampere=3.17/sample"       a factor with the suffix /sample stretches the per-sample part of
//                              the region only, not the rank's fixed per-step cost (kernel
//                              launches, the optimizer, Python): see compute_stretch.h for how a
//                              clock tells the two apart. The suffix goes before any @stepS
//                              ("rank1=2/sample@step30"); factors without it keep stretching the
//                              whole region. Whole and per-sample factors in force multiply
//                              separately: a region of real time t and n samples takes
//                              W x (t + (S - 1) x b x n), b the fitted time of one sample.
// Every factor is finite and >= 1 (a region cannot be made faster than it is). A map with family
// entries must match the worker's family (or have "*"); a map of rank entries only leaves the
// family factor 1. Every clock stretches each measured compute interval to k times, never a wait.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

struct SlowdownPhase {
  int64_t from_step = 0;
  double factor = 1.0;
  bool per_sample = false;  ///< "/sample": stretches the per-sample part of the region only
};

/// One worker's factor per step.
class EmulatedSlowdown {
 public:
  /// The factor at 0-based step `step`: the family's (or the single) factor in force times every
  /// rank entry in force.
  double At(int64_t step) const;
  /// The product of the whole-region factors in force at `step` (W).
  double WholeAt(int64_t step) const;
  /// The product of the per-sample ("/sample") factors in force at `step` (S); At() = W x S.
  double PerSampleAt(int64_t step) const;
  /// True when no entry starts after step 0.
  bool constant() const;

 private:
  friend Result<EmulatedSlowdown> ParseEmulatedSlowdownSchedule(std::string_view, std::string_view,
                                                                int64_t);
  std::vector<SlowdownPhase> family_;  // at most one
  std::vector<SlowdownPhase> rank_;
};

/// The schedule for global rank `rank` (-1: unknown, rank entries then never match) of GPU family
/// `family`. kInvalidArgument naming the text and the bad entry.
Result<EmulatedSlowdown> ParseEmulatedSlowdownSchedule(std::string_view text,
                                                       std::string_view family, int64_t rank);

/// This worker's schedule from HETRUN_EMULATE_SLOWDOWN, HETRUN_GPU_FAMILY and RANK.
Result<EmulatedSlowdown> EmulatedSlowdownScheduleFromEnv(const Environment& env);

/// The factor at step 0 for a worker of GPU family `family` ("" when unknown) and no rank.
/// kInvalidArgument naming the text when it does not parse, and naming the family when a map has
/// no entry for it.
Result<double> ParseEmulatedSlowdown(std::string_view text, std::string_view family);

/// This worker's factor at step 0 from HETRUN_EMULATE_SLOWDOWN, HETRUN_GPU_FAMILY and RANK;
/// 1.0 when unset.
/// Errors name the variable.
Result<double> EmulatedSlowdownFromEnv(const Environment& env);

}  // namespace hetrun

// Compute-time measurement for the tuner (docs/ARCHITECTURE.md §5). A step's compute region is what
// a rank spends on its own samples (forward + backward, possibly several micro-batches); data
// loading and the wait for the gradient all-reduce are outside it.
//
// GPU: CUDA events on the current stream; nothing synchronises the host inside the step.
// FinishStep() returns the steps whose end events have completed (usually the previous step's),
// tagged with their sample count. CPU: a steady clock; results are immediate.
// The wait for the gradient all-reduce (StartWait/StopWait) is measured the same way: on GPU two
// events on the current stream, the second recorded after the collective's wait() made the
// stream wait for it, so the figure is the stream's wait, not the host's (NCCL's wait() does not
// block the host, and a host clock would hand the wait to the next blocking copy). It is read
// with the step's compute events, one step late like them.
// Emulated slowdown (CPU): StopCompute() sleeps (k - 1) times the region's real elapsed time,
// then the clock is read, so the reported time is measured, never computed. With a schedule, k
// is the factor of the current step (the n-th StartStep() is step n - 1, as the tuner counts),
// so `rank1=2.0@step30` turns the rank slower from its 31st step on.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "hetrun/job/emulated_slowdown.h"

namespace hetrun {

struct StepMeasurement {
  int64_t samples = 0;    ///< the tag given to StartStep()
  double compute_ms = 0;  ///< the sum of the step's compute regions
  double wait_ms = 0;     ///< StartWait() to StopWait(), 0 when the step had no wait region
};

class StepTimer {
 public:
  /// `slowdown` >= 1 applies on CPU only (on GPU the caller should pass 1).
  StepTimer(torch::Device device, double slowdown);
  /// Each step's factor from `schedule` (HETRUN_EMULATE_SLOWDOWN with `@stepS`); CPU only.
  StepTimer(torch::Device device, EmulatedSlowdown schedule);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  void StartStep(int64_t samples);
  void StartCompute();
  void StopCompute();
  /// The wait for the step's gradient all-reduce: StartWait() before the collective's wait(),
  /// StopWait() right after it (on GPU, once the current stream has been made to wait).
  void StartWait();
  void StopWait();
  /// Closes the step; returns every completed measurement not yet returned, oldest first.
  std::vector<StepMeasurement> FinishStep();
  /// The arrival figure a rank can put in its last gradient bucket without blocking: on CPU the
  /// current step's compute so far (call it after StopCompute()); on GPU the compute time of the
  /// latest step whose events FinishStep() has read (usually the previous step), 0 before any.
  double ArrivalMs() const;

 private:
  struct GpuStep;
  torch::Device device_;
  double slowdown_;
  std::optional<EmulatedSlowdown> schedule_;
  int64_t step_ = -1;  // StartStep() calls so far, minus one
  int64_t samples_ = 0;
  // CPU
  std::chrono::steady_clock::time_point region_start_;
  double cpu_ms_ = 0;
  std::chrono::steady_clock::time_point wait_start_;
  double cpu_wait_ms_ = 0;
  // GPU: steps whose events are recorded but not yet read.
  std::deque<std::unique_ptr<GpuStep>> pending_;
  std::unique_ptr<GpuStep> current_;
  double last_gpu_ms_ = 0;
};

}  // namespace hetrun

#include "hetrun/step_timer.h"

#include <ATen/cuda/CUDAEvent.h>

#include <thread>
#include <utility>

namespace hetrun {

struct StepTimer::GpuStep {
  int64_t samples = 0;
  // Timing-enabled events (CUDAEvent's default flags disable timing), recorded on the current
  // stream: start and stop of each compute region.
  std::vector<std::pair<at::cuda::CUDAEvent, at::cuda::CUDAEvent>> regions;
  // The wait for the gradient all-reduce, on the same stream; absent until StartWait().
  std::unique_ptr<std::pair<at::cuda::CUDAEvent, at::cuda::CUDAEvent>> wait;
  bool open = false;

  /// The event recorded last: when it has completed, every figure of the step can be read.
  at::cuda::CUDAEvent* Last() {
    if (wait) return &wait->second;
    return regions.empty() ? nullptr : &regions.back().second;
  }
};

StepTimer::StepTimer(torch::Device device, double slowdown)
    : device_(device), slowdown_(device.is_cuda() ? 1.0 : slowdown) {}

StepTimer::StepTimer(torch::Device device, EmulatedSlowdown schedule)
    : device_(device), slowdown_(1.0) {
  if (!device.is_cuda()) schedule_ = std::move(schedule);
}

StepTimer::~StepTimer() = default;

void StepTimer::StartStep(int64_t samples) {
  ++step_;
  if (schedule_) slowdown_ = schedule_->At(step_);
  samples_ = samples;
  cpu_ms_ = 0;
  cpu_wait_ms_ = 0;
  if (device_.is_cuda()) {
    current_ = std::make_unique<GpuStep>();
    current_->samples = samples;
  }
}

void StepTimer::StartCompute() {
  if (device_.is_cuda()) {
    current_->regions.emplace_back(at::cuda::CUDAEvent(cudaEventDefault),
                                   at::cuda::CUDAEvent(cudaEventDefault));
    current_->regions.back().first.record();
    current_->open = true;
    return;
  }
  region_start_ = std::chrono::steady_clock::now();
}

void StepTimer::StopCompute() {
  if (device_.is_cuda()) {
    current_->regions.back().second.record();
    current_->open = false;
    return;
  }
  auto real = std::chrono::steady_clock::now() - region_start_;
  if (slowdown_ > 1.0) {
    // Emulated slower device: wait out the difference, then read the clock again. What is
    // reported is the measured elapsed time of the (stretched) region.
    std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double, std::nano>(
            static_cast<double>(std::chrono::nanoseconds(real).count()) * (slowdown_ - 1.0))));
  }
  cpu_ms_ +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - region_start_)
          .count();
}

void StepTimer::StartWait() {
  if (device_.is_cuda()) {
    current_->wait = std::make_unique<std::pair<at::cuda::CUDAEvent, at::cuda::CUDAEvent>>(
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault));
    current_->wait->first.record();
    return;
  }
  wait_start_ = std::chrono::steady_clock::now();
}

void StepTimer::StopWait() {
  if (device_.is_cuda()) {
    if (current_->wait) current_->wait->second.record();
    return;
  }
  cpu_wait_ms_ +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wait_start_)
          .count();
}

std::vector<StepMeasurement> StepTimer::FinishStep() {
  std::vector<StepMeasurement> done;
  if (!device_.is_cuda()) {
    done.push_back({samples_, cpu_ms_, cpu_wait_ms_});
    cpu_ms_ = 0;
    cpu_wait_ms_ = 0;
    return done;
  }
  if (current_) pending_.push_back(std::move(current_));
  // Read only steps whose last event has completed: query() never blocks the host.
  while (!pending_.empty()) {
    GpuStep& step = *pending_.front();
    if (at::cuda::CUDAEvent* last = step.Last(); last != nullptr && !last->query()) break;
    double ms = 0;
    for (auto& [start, stop] : step.regions) ms += start.elapsed_time(stop);
    const double wait_ms = step.wait ? step.wait->first.elapsed_time(step.wait->second) : 0.0;
    done.push_back({step.samples, ms, wait_ms});
    last_gpu_ms_ = ms;
    pending_.pop_front();
  }
  return done;
}

double StepTimer::ArrivalMs() const {
  return device_.is_cuda() ? last_gpu_ms_ : cpu_ms_;
}

}  // namespace hetrun

#include "hetrun/tuner_loop.h"

#include <chrono>

namespace hetrun {

Result<TunerLoop> TunerLoop::Create(const Runtime& runtime, TunerLoopOptions options) {
  const auto ranks = static_cast<int>(runtime.data_parallel_ranks().size());
  HETRUN_ASSIGN_OR_RETURN(
      tuner::WindowLoop loop,
      tuner::WindowLoop::Create(std::move(options), runtime.data_parallel_rank(), ranks));
  return TunerLoop(runtime, std::move(loop));
}

Result<std::optional<WindowReport>> TunerLoop::EndIteration(
    const std::vector<StepMeasurement>& measured, double step_ms, double wait_ms) {
  const auto begin = std::chrono::steady_clock::now();
  HETRUN_RETURN_IF_ERROR(runtime_->Heartbeat());
  tuner::StepTimes times;
  times.step_ms = step_ms;
  times.wait_ms = wait_ms;
  times.hook_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  std::vector<tuner::Observation> observations;
  observations.reserve(measured.size());
  for (const StepMeasurement& m : measured) observations.push_back({m.samples, m.compute_ms});
  const Runtime& rt = *runtime_;
  return loop_.EndIteration(observations, times, [&rt](std::span<const std::byte> mine) {
    return rt.AllGatherBytes(rt.data_parallel_group(), mine);
  });
}

}  // namespace hetrun

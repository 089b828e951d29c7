#include "hetrun/tuner_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace hetrun {
namespace {

std::vector<int64_t> EvenSplit(int64_t batch, int64_t ranks) {
  std::vector<int64_t> shares(static_cast<size_t>(ranks), batch / ranks);
  for (int64_t r = 0; r < batch % ranks; ++r) ++shares[static_cast<size_t>(r)];
  return shares;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace

Result<TunerLoop> TunerLoop::Create(const Runtime& runtime, TunerLoopOptions options) {
  const int64_t ranks = static_cast<int64_t>(runtime.data_parallel_ranks().size());
  if (options.batch < 1) return InvalidArgumentError("tuner loop: the batch must be >= 1");
  if (options.warmup < 0) return InvalidArgumentError("tuner loop: warmup must be >= 0");
  const int64_t m = options.min_share;
  if (m < 0 || m * ranks > options.batch) {
    return InvalidArgumentError(
        "tuner loop: min_share " + std::to_string(m) + " for " + std::to_string(ranks) +
        " ranks needs 0 <= min_share * ranks <= " + "the batch " + std::to_string(options.batch));
  }
  if (options.cap == 0) options.cap = options.batch;
  if (options.cap < m) {
    return InvalidArgumentError("tuner loop: cap " + std::to_string(options.cap) +
                                " is below min_share " + std::to_string(m));
  }
  if (options.initial.empty()) options.initial = EvenSplit(options.batch, ranks);
  if (static_cast<int64_t>(options.initial.size()) != ranks) {
    return InvalidArgumentError("tuner loop: " + std::to_string(options.initial.size()) +
                                " initial shares for a data-parallel group of " +
                                std::to_string(ranks));
  }
  // The controller works on the samples above the minimum (see TunerLoopOptions::min_share).
  std::vector<int64_t> above(options.initial);
  for (int64_t& share : above) {
    if (share < m) {
      return InvalidArgumentError("tuner loop: an initial share of " + std::to_string(share) +
                                  " is below min_share " + std::to_string(m));
    }
    share -= m;
  }
  HETRUN_ASSIGN_OR_RETURN(
      tuner::Controller controller,
      tuner::Controller::Create(options.controller, options.batch - m * ranks,
                                runtime.data_parallel_rank(), options.cap - m, std::move(above)));
  return TunerLoop(runtime, std::move(options), std::move(controller));
}

void TunerLoop::UpdateShares() {
  shares_ = controller_.shares();
  for (int64_t& share : shares_) share += options_.min_share;
}

tuner::MicroBatchPlan TunerLoop::local_micro_batches() const {
  int64_t share = local_share();
  int64_t max_size =
      options_.max_micro_batch > 0 ? options_.max_micro_batch : std::max<int64_t>(share, 1);
  Result<tuner::MicroBatchPlan> plan = tuner::PlanMicroBatches(share, max_size);
  return plan.ok() ? *plan : tuner::MicroBatchPlan{max_size, share > 0 ? 1 : 0, share};
}

Result<std::optional<WindowReport>> TunerLoop::EndIteration(
    const std::vector<StepMeasurement>& measured, double step_ms, double wait_ms) {
  const auto begin = std::chrono::steady_clock::now();
  auto elapsed_ms = [&begin]() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
        .count();
  };
  HETRUN_RETURN_IF_ERROR(runtime_->Heartbeat());
  // Warm-up iterations feed nothing: not the fit, not the window's figures.
  if (++iterations_ <= options_.warmup) return std::optional<WindowReport>();
  for (const StepMeasurement& m : measured) {
    if (m.compute_ms <= 0) continue;  // a step with no compute region: nothing to learn
    HETRUN_RETURN_IF_ERROR(controller_.Record(m.samples, m.compute_ms));
    window_compute_.push_back(m.compute_ms);
  }
  ++window_steps_;
  window_step_ms_ += step_ms;
  window_wait_ms_ += wait_ms;
  if (window_steps_ < options_.controller.window) {
    window_overhead_ms_ += elapsed_ms();
    return std::optional<WindowReport>();
  }
  // Windows close by iteration count (identical on every rank), not by measurements recorded:
  // on GPU a step's events may be read one step later on one rank than on another.

  WindowReport report;
  report.window = ++windows_;
  report.shares_used = shares_;
  RankWindow mine;
  mine.fit = controller_.CloseWindow();
  if (mine.fit.c_ms > 0 && options_.min_share > 0) {
    // Fixed time as the controller sees it: the guaranteed min_share samples are part of it.
    mine.fit.a_ms = tuner::PredictedMs(mine.fit, options_.min_share);
  }
  mine.compute_ms = Median(window_compute_);
  mine.step_ms = window_step_ms_ / static_cast<double>(window_steps_);
  mine.wait_ms = window_wait_ms_ / static_cast<double>(window_steps_);
  mine.window_ms = window_step_ms_;
  mine.bookkeeping_ms = window_overhead_ms_;
  mine.last_boundary_ms = last_boundary_ms_;
  const auto boundary_begin = std::chrono::steady_clock::now();
  window_compute_.clear();
  window_step_ms_ = window_wait_ms_ = 0;
  window_steps_ = 0;

  HETRUN_ASSIGN_OR_RETURN(
      std::vector<std::byte> bytes,
      runtime_->AllGatherBytes(runtime_->data_parallel_group(),
                               std::as_bytes(std::span<const RankWindow>(&mine, 1))));
  report.ranks.resize(bytes.size() / sizeof(RankWindow));
  std::memcpy(report.ranks.data(), bytes.data(), bytes.size());
  if (options_.tune) {
    std::vector<tuner::RankFit> fits;
    fits.reserve(report.ranks.size());
    for (const RankWindow& r : report.ranks) fits.push_back(r.fit);
    HETRUN_ASSIGN_OR_RETURN(tuner::Decision decision, controller_.Apply(fits));
    report.decision = std::move(decision);
  }
  UpdateShares();
  report.shares_next = shares_;
  double bookkeeping = 0;
  double boundary = report.ranks.empty() ? 0 : report.ranks[0].last_boundary_ms;
  for (const RankWindow& r : report.ranks) {
    bookkeeping = std::max(bookkeeping, r.bookkeeping_ms);
    boundary = std::min(boundary, r.last_boundary_ms);
  }
  report.overhead_ms = bookkeeping + boundary;
  last_boundary_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - boundary_begin)
          .count();
  report.tuner_ms = window_overhead_ms_ + elapsed_ms();
  window_overhead_ms_ = 0;
  return std::optional<WindowReport>(std::move(report));
}

}  // namespace hetrun

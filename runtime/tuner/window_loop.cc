// The tuner's per-step loop: windows, warm-up, min_share, the boundary's exchange and report.
#include "hetrun/tuner/window_loop.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "hetrun/base/atomic_file.h"

namespace hetrun::tuner {
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

double MsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
      .count();
}

Status ValidateLoopOptions(WindowLoopOptions& options, int64_t ranks) {
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
  for (int64_t share : options.initial) {
    if (share < m) {
      return InvalidArgumentError("tuner loop: an initial share of " + std::to_string(share) +
                                  " is below min_share " + std::to_string(m));
    }
  }
  return Status::Ok();
}

}  // namespace

double WindowReport::overhead_fraction() const {
  const double window_ms = ranks.empty() ? 0 : ranks[0].window_ms;
  return window_ms + overhead_ms > 0 ? overhead_ms / (window_ms + overhead_ms) : 0;
}

Result<WindowLoop> WindowLoop::Create(WindowLoopOptions options, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    return InvalidArgumentError("tuner loop: rank " + std::to_string(rank) +
                                " is not in a group of " + std::to_string(ranks));
  }
  HETRUN_RETURN_IF_ERROR(ValidateLoopOptions(options, ranks));
  // The controller works on the samples above the minimum (see WindowLoopOptions::min_share).
  const int64_t m = options.min_share;
  std::vector<int64_t> above(options.initial);
  for (int64_t& share : above) share -= m;
  const Environment env = Environment::FromProcess();
  if (options.model.empty()) options.model = env.Get("HETRUN_GPU_MODEL").value_or("");
  HETRUN_ASSIGN_OR_RETURN(
      Controller controller,
      Controller::Create(options.controller, options.batch - m * ranks, rank, options.cap - m,
                         std::move(above), FamilyPoolKey(options.model)));
  HETRUN_ASSIGN_OR_RETURN(FailSlowDetector health, FailSlowDetector::Create(options.fail_slow));
  const std::string model = options.model;
  WindowLoop loop(std::move(options), rank, std::move(controller), std::move(health));
  loop.metrics_ = RankMetricsWriter::FromEnvironment(env, rank);
  std::memcpy(loop.model_, model.data(), std::min(model.size(), sizeof(loop.model_) - 1));
  if (std::optional<std::string> run_dir = env.Get("HETRUN_RUN_DIR");
      run_dir && !run_dir->empty()) {
    Result<std::optional<int64_t>> global = env.GetInt("RANK");
    loop.fail_slow_path_ =
        FailSlowReportPath(*run_dir, global.ok() && *global ? static_cast<int>(**global) : rank);
  }
  return loop;
}

void WindowLoop::UpdateShares() {
  shares_ = controller_.shares();
  for (int64_t& share : shares_) share += options_.min_share;
}

MicroBatchPlan WindowLoop::local_micro_batches() const {
  int64_t share = local_share();
  int64_t max_size =
      options_.max_micro_batch > 0 ? options_.max_micro_batch : std::max<int64_t>(share, 1);
  Result<MicroBatchPlan> plan = PlanMicroBatches(share, max_size);
  return plan.ok() ? *plan : MicroBatchPlan{max_size, share > 0 ? 1 : 0, share};
}

Result<std::optional<RankWindow>> WindowLoop::CloseStep(std::span<const Observation> measured,
                                                        const StepTimes& times) {
  const auto begin = std::chrono::steady_clock::now();
  if (awaiting_gather_) {
    return FailedPreconditionError(
        "tuner loop: a window's record was not exchanged (ApplyGathered) before the next step");
  }
  // Warm-up iterations feed nothing: not the fit, not the window's figures.
  if (++iterations_ <= options_.warmup) return std::optional<RankWindow>();
  for (const Observation& m : measured) {
    if (m.compute_ms <= 0) continue;  // a step with no compute region: nothing to learn
    HETRUN_RETURN_IF_ERROR(controller_.Record(m.samples, m.compute_ms));
    window_compute_.push_back(m.compute_ms);
  }
  ++window_steps_;
  window_step_ms_ += times.step_ms;
  window_wait_ms_ += times.wait_ms;
  if (window_steps_ < options_.controller.window) {
    window_overhead_ms_ += times.hook_ms + MsSince(begin);
    return std::optional<RankWindow>();
  }
  RankWindow mine;
  mine.fit = controller_.CloseWindow();
  if (mine.fit.c_ms > 0 && options_.min_share > 0) {
    // Fixed time as the controller sees it: the guaranteed min_share samples are part of it.
    mine.fit.a_ms = PredictedMs(mine.fit, options_.min_share);
  }
  mine.compute_ms = Median(window_compute_);
  mine.step_ms = window_step_ms_ / static_cast<double>(window_steps_);
  mine.wait_ms = window_wait_ms_ / static_cast<double>(window_steps_);
  mine.window_ms = window_step_ms_;
  mine.bookkeeping_ms = window_overhead_ms_;
  mine.last_boundary_ms = last_boundary_ms_;
  std::memcpy(mine.model, model_, sizeof(mine.model));
  window_compute_.clear();
  window_step_ms_ = window_wait_ms_ = 0;
  window_steps_ = 0;
  awaiting_gather_ = true;
  step_begin_ = begin;
  step_hook_ms_ = times.hook_ms;
  boundary_begin_ = std::chrono::steady_clock::now();
  return std::optional<RankWindow>(mine);
}

void WindowLoop::MeasureAgainstIdeal(WindowReport& report) const {
  double step_ms = 0;
  std::vector<RankFit> fits;
  bool fitted = true;
  for (const RankWindow& r : report.ranks) {
    report.achieved_compute_ms = std::max(report.achieved_compute_ms, r.compute_ms);
    step_ms = std::max(step_ms, r.step_ms);
    fits.push_back(r.fit);
    fitted = fitted && r.fit.c_ms > 0;
  }
  const auto batch = static_cast<double>(options_.batch);
  if (step_ms > 0) report.samples_per_s = 1000 * batch / step_ms;
  if (!fitted || report.achieved_compute_ms <= 0) return;
  // The fits count the samples above min_share (a_ms includes them), as the controller's do.
  const int64_t above = options_.batch - options_.min_share * static_cast<int64_t>(fits.size());
  // Caps that cannot hold the batch leave the figure unknown; Apply() reports them when tuning.
  Result<std::vector<int64_t>> best = SolveShares(above, fits);
  if (!best.ok()) return;
  report.optimal_compute_ms = PredictedIterationMs(fits, *best);
  report.efficiency = report.optimal_compute_ms / report.achieved_compute_ms;
  const double rest_ms = std::max(0.0, step_ms - report.achieved_compute_ms);
  report.ideal_samples_per_s = 1000 * batch / (report.optimal_compute_ms + rest_ms);
}

// Fail-slow detection over the gathered records; this rank reports itself when it is the slow
// one: a line in its log outside `hetrun run`, else a report file the launcher acts on.
Status WindowLoop::CheckHealth(WindowReport& report) {
  std::vector<std::string> families;
  std::vector<RankFit> fits;
  for (const RankWindow& r : report.ranks) {
    families.emplace_back(r.model, strnlen(r.model, sizeof(r.model)));
    fits.push_back(r.fit);
  }
  HETRUN_ASSIGN_OR_RETURN(report.health, health_.Update(families, fits));
  const FailSlowVerdict& mine = report.health[static_cast<size_t>(rank_)];
  if (!mine.reported) return Status::Ok();
  const std::string text = FailSlowText(mine, families[static_cast<size_t>(rank_)],
                                        options_.fail_slow.windows, report.window);
  if (fail_slow_path_.empty()) {
    spdlog::warn("fail-slow: rank {} {}", rank_, text);
    return Status::Ok();
  }
  const std::string dir = fail_slow_path_.substr(0, fail_slow_path_.rfind('/'));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    spdlog::warn("fail-slow: rank {} {} (its report for hetrun run was not written: {})", rank_,
                 text, ErrnoError("mkdir", dir, errno).message());
    return Status::Ok();
  }
  if (Status written = WriteFileAtomically(fail_slow_path_, text + "\n", "fail-slow report", 0600);
      !written.ok()) {
    spdlog::warn("fail-slow: rank {} {} (its report for hetrun run was not written: {})", rank_,
                 text, written.message());
  }
  return Status::Ok();
}

Result<WindowReport> WindowLoop::ApplyGathered(std::span<const std::byte> gathered) {
  if (!awaiting_gather_) {
    return FailedPreconditionError("tuner loop: gathered records outside a window boundary");
  }
  const size_t ranks = shares_.size();
  if (gathered.size() != ranks * sizeof(RankWindow)) {
    return FailedPreconditionError("tuner loop: gathered " + std::to_string(gathered.size()) +
                                   " bytes, expected " + std::to_string(ranks) + " records of " +
                                   std::to_string(sizeof(RankWindow)) + " bytes");
  }
  awaiting_gather_ = false;
  WindowReport report;
  report.window = ++windows_;
  report.shares_used = shares_;
  report.ranks.resize(ranks);
  std::memcpy(report.ranks.data(), gathered.data(), gathered.size());
  if (options_.tune) {
    std::vector<RankFit> fits;
    fits.reserve(ranks);
    for (const RankWindow& r : report.ranks) fits.push_back(r.fit);
    HETRUN_ASSIGN_OR_RETURN(Decision decision, controller_.Apply(fits));
    report.decision = std::move(decision);
  }
  UpdateShares();
  report.shares_next = shares_;
  double bookkeeping = 0;
  double boundary = report.ranks[0].last_boundary_ms;
  for (const RankWindow& r : report.ranks) {
    bookkeeping = std::max(bookkeeping, r.bookkeeping_ms);
    boundary = std::min(boundary, r.last_boundary_ms);
  }
  report.overhead_ms = bookkeeping + boundary;
  MeasureAgainstIdeal(report);
  HETRUN_RETURN_IF_ERROR(CheckHealth(report));
  if (report.shares_next != report.shares_used) ++share_changes_;
  if (metrics_.enabled()) {
    // Once per window, off the steps: a failure is logged once and the figures stop.
    if (Status written = metrics_.Write(RankMetricsText(report, rank_, share_changes_));
        !written.ok()) {
      spdlog::warn("{}; per-rank metrics stop", written.message());
    }
  }
  last_boundary_ms_ = MsSince(boundary_begin_);
  report.tuner_ms = window_overhead_ms_ + step_hook_ms_ + MsSince(step_begin_);
  window_overhead_ms_ = 0;
  return report;
}

Result<std::optional<WindowReport>> WindowLoop::EndIteration(std::span<const Observation> measured,
                                                             const StepTimes& times,
                                                             const AllGatherFn& all_gather) {
  HETRUN_ASSIGN_OR_RETURN(std::optional<RankWindow> mine, CloseStep(measured, times));
  if (!mine) return std::optional<WindowReport>();
  Result<std::vector<std::byte>> bytes =
      all_gather(std::as_bytes(std::span<const RankWindow>(&*mine, 1)));
  if (!bytes.ok()) {
    awaiting_gather_ = false;
    return bytes.status();
  }
  HETRUN_ASSIGN_OR_RETURN(WindowReport report, ApplyGathered(*bytes));
  return std::optional<WindowReport>(std::move(report));
}

}  // namespace hetrun::tuner

// The online controller: dead band, minimum gain, step limit; decisions only at window ends.
#include "hetrun/tuner/controller.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace hetrun::tuner {
namespace {

bool InUnit(double x) {
  return std::isfinite(x) && x >= 0 && x <= 1;
}

// Splits `total` over `weights` (>= 0, sum > 0) proportionally, by largest remainder with ties to
// the lower index; part r never exceeds ceil(weights[r] * total / sum).
std::vector<int64_t> Apportion(std::span<const int64_t> weights, int64_t total) {
  int64_t sum = std::accumulate(weights.begin(), weights.end(), int64_t{0});
  std::vector<int64_t> parts(weights.size(), 0);
  if (sum <= 0 || total <= 0) return parts;
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (size_t r = 0; r < weights.size(); ++r) {
    // Exact integer arithmetic where possible: weights and totals are sample counts.
    __int128 num = static_cast<__int128>(weights[r]) * total;
    parts[r] = static_cast<int64_t>(num / sum);
    given += parts[r];
    remainders.push_back({static_cast<double>(num % sum), r});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; given < total && i < remainders.size(); ++i, ++given) {
    ++parts[remainders[i].second];
  }
  return parts;
}

}  // namespace

Status ValidateControllerOptions(const ControllerOptions& o) {
  if (o.window < 1) return InvalidArgumentError("tuner: window must be >= 1");
  if (!InUnit(o.dead_band)) return InvalidArgumentError("tuner: dead_band must be in [0, 1]");
  if (!InUnit(o.min_gain)) return InvalidArgumentError("tuner: min_gain must be in [0, 1]");
  if (!std::isfinite(o.max_relative_step) || o.max_relative_step <= 0) {
    return InvalidArgumentError("tuner: max_relative_step must be finite and > 0");
  }
  if (!std::isfinite(o.noise_sigmas) || o.noise_sigmas < 0) {
    return InvalidArgumentError("tuner: noise_sigmas must be finite and >= 0");
  }
  if (!InUnit(o.max_step) || o.max_step <= 0) {
    return InvalidArgumentError("tuner: max_step must be in (0, 1]");
  }
  const CostModelOptions& m = o.cost_model;
  if (!InUnit(m.forgetting) || m.forgetting <= 0) {
    return InvalidArgumentError("tuner: forgetting must be in (0, 1]");
  }
  if (m.max_points < 1) return InvalidArgumentError("tuner: max_points must be >= 1");
  if (!std::isfinite(m.slope_sigmas) || m.slope_sigmas < 0) {
    return InvalidArgumentError("tuner: slope_sigmas must be finite and >= 0");
  }
  if (!InUnit(m.min_slope_fraction)) {
    return InvalidArgumentError("tuner: min_slope_fraction must be in [0, 1]");
  }
  if (!std::isfinite(m.local_width) || m.local_width <= 0) {
    return InvalidArgumentError("tuner: local_width must be finite and > 0");
  }
  if (!InUnit(m.min_relative_spread) || !std::isfinite(m.change_sigmas) || m.change_sigmas < 0 ||
      !std::isfinite(m.change_floor) || m.change_floor < 0) {
    return InvalidArgumentError("tuner: cost model thresholds must be finite and >= 0");
  }
  return Status::Ok();
}

RankObserver::RankObserver(CostModelOptions options, int32_t family)
    : model_(options), family_(family) {}

Status RankObserver::Record(int64_t samples, double compute_ms) {
  if (samples < 0) {
    return InvalidArgumentError("tuner: samples must be >= 0, got " + std::to_string(samples));
  }
  if (!std::isfinite(compute_ms) || compute_ms <= 0) {
    return InvalidArgumentError("tuner: compute time must be finite and > 0 ms, got " +
                                std::to_string(compute_ms));
  }
  window_.push_back({samples, compute_ms});
  return Status::Ok();
}

RankFit RankObserver::CloseWindow(int64_t cap, int64_t share) {
  last_changed_ = false;
  for (const WindowPoint& p : SummarizeWindow(window_)) {
    if (model_.AddPoint(p)) last_changed_ = true;
  }
  window_.clear();
  RankFit fit;
  fit.cap = cap;
  fit.n = share;
  fit.family = family_;
  if (model_.has_fit()) {
    fit.a_ms = model_.a_ms();
    fit.c_ms = model_.c_ms();
    fit.sigma_ms = model_.sigma_ms();
  }
  return fit;
}

std::vector<int64_t> LimitStep(std::span<const int64_t> from, std::span<const int64_t> to,
                               int64_t limit) {
  std::vector<int64_t> gains(from.size(), 0), losses(from.size(), 0);
  int64_t moved = 0;
  for (size_t r = 0; r < from.size(); ++r) {
    int64_t d = to[r] - from[r];
    if (d > 0) {
      gains[r] = d;
      moved += d;
    } else {
      losses[r] = -d;
    }
  }
  if (moved <= limit) return std::vector<int64_t>(to.begin(), to.end());
  std::vector<int64_t> up = Apportion(gains, limit);
  std::vector<int64_t> down = Apportion(losses, limit);
  std::vector<int64_t> next(from.begin(), from.end());
  for (size_t r = 0; r < from.size(); ++r) next[r] += up[r] - down[r];
  return next;
}

double ShareController::DeadBand(std::span<const RankFit> fits) const {
  // The fits' own noise: the largest relative standard error of a rank's time at its share.
  double noise = 0;
  for (size_t r = 0; r < fits.size(); ++r) {
    const double at = PredictedMs(fits[r], shares_[r]);
    if (at > 0) noise = std::max(noise, fits[r].sigma_ms / at);
  }
  // The predicted iteration is a maximum over the ranks' fits: its noise grows like the largest
  // of R normal errors, about sqrt(2 ln R) standard errors.
  const double ranks = std::max<double>(2, static_cast<double>(fits.size()));
  return std::max(options_.dead_band,
                  options_.noise_sigmas * std::sqrt(2 * std::log(ranks)) * noise);
}

int64_t ShareController::StepLimit(std::span<const int64_t> best) const {
  const double batch = static_cast<double>(batch_);
  double limit = std::floor(options_.max_step * batch);
  // Trust region: the fits are local lines, valid near each rank's share. Scale the move so no
  // rank's share changes by more than max_relative_step of its share (or of the mean share).
  const double mean = batch / static_cast<double>(shares_.size());
  double moved = 0, scale = 1;
  for (size_t r = 0; r < shares_.size(); ++r) {
    const double d = std::fabs(static_cast<double>(best[r] - shares_[r]));
    moved += best[r] > shares_[r] ? d : 0;
    const double room =
        options_.max_relative_step * std::max(static_cast<double>(shares_[r]), mean);
    if (d > room) scale = std::min(scale, room / d);
  }
  limit = std::min(limit, std::floor(scale * moved));
  return std::max<int64_t>(1, static_cast<int64_t>(limit));
}

Result<ShareController> ShareController::Create(ControllerOptions options, int64_t batch,
                                                std::vector<int64_t> initial) {
  HETRUN_RETURN_IF_ERROR(ValidateControllerOptions(options));
  if (batch < 0) return InvalidArgumentError("tuner: batch must be >= 0");
  if (initial.empty()) return InvalidArgumentError("tuner: a group needs at least one rank");
  int64_t sum = 0;
  for (int64_t s : initial) {
    if (s < 0) return InvalidArgumentError("tuner: initial shares must be >= 0");
    sum += s;
  }
  if (sum != batch) {
    return InvalidArgumentError("tuner: initial shares sum to " + std::to_string(sum) +
                                ", the batch is " + std::to_string(batch));
  }
  return ShareController(options, batch, std::move(initial));
}

Result<Decision> ShareController::Decide(std::span<const RankFit> raw_fits) {
  if (raw_fits.size() != shares_.size()) {
    return FailedPreconditionError("tuner: gathered " + std::to_string(raw_fits.size()) +
                                   " records for a group of " + std::to_string(shares_.size()));
  }
  Decision d;
  d.shares = shares_;
  for (size_t r = 0; r < raw_fits.size(); ++r) {
    if (raw_fits[r].n != shares_[r]) {
      return FailedPreconditionError(
          "tuner: rank " + std::to_string(r) + " reports " + std::to_string(raw_fits[r].n) +
          " samples, the split gives it " + std::to_string(shares_[r]) + ": the ranks disagree");
    }
    if (raw_fits[r].c_ms == 0) return d;  // a rank without an estimate yet: hold
  }
  const std::vector<RankFit> pooled_fits = PoolFamilies(raw_fits, options_.family_pool);
  std::span<const RankFit> fits(pooled_fits);
  HETRUN_ASSIGN_OR_RETURN(std::vector<int64_t> best, SolveShares(batch_, fits));
  d.predicted_current_ms = PredictedIterationMs(fits, shares_);
  d.predicted_best_ms = PredictedIterationMs(fits, best);
  d.predicted_next_ms = d.predicted_current_ms;
  bool over_cap = false;
  for (size_t r = 0; r < fits.size(); ++r) over_cap = over_cap || shares_[r] > fits[r].cap;
  // A cap that dropped below the current share must be honoured now, whatever the gain.
  if (!over_cap) {
    if (d.predicted_current_ms <= d.predicted_best_ms * (1 + DeadBand(fits))) return d;
    std::vector<int64_t> next = LimitStep(shares_, best, StepLimit(best));
    double next_ms = PredictedIterationMs(fits, next);
    if (next_ms > d.predicted_current_ms * (1 - options_.min_gain)) return d;
    d.shares = std::move(next);
    d.predicted_next_ms = next_ms;
  } else {
    d.shares = best;
    d.predicted_next_ms = d.predicted_best_ms;
  }
  d.changed = d.shares != shares_;
  shares_ = d.shares;
  return d;
}

Result<Controller> Controller::Create(ControllerOptions options, int64_t batch, int rank,
                                      int64_t cap, std::vector<int64_t> initial, int32_t family) {
  HETRUN_ASSIGN_OR_RETURN(ShareController group,
                          ShareController::Create(options, batch, std::move(initial)));
  if (rank < 0 || static_cast<size_t>(rank) >= group.shares().size()) {
    return InvalidArgumentError("tuner: rank " + std::to_string(rank) + " is not in a group of " +
                                std::to_string(group.shares().size()));
  }
  if (cap < 0) return InvalidArgumentError("tuner: cap must be >= 0");
  return Controller(std::move(group), rank, cap, family);
}

Status Controller::Record(int64_t samples, double compute_ms) {
  HETRUN_RETURN_IF_ERROR(observer_.Record(samples, compute_ms));
  ++recorded_;
  return Status::Ok();
}

RankFit Controller::CloseWindow() {
  recorded_ = 0;
  return observer_.CloseWindow(cap_, local_share());
}

Result<Decision> Controller::Apply(std::span<const RankFit> gathered) {
  return group_.Decide(gathered);
}

}  // namespace hetrun::tuner

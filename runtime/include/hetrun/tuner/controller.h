// The online load-balancing controller (docs/ARCHITECTURE.md §5), as runtime/torch uses it:
//
//   Controller ctl = *Controller::Create(options, batch, rank, cap, initial_shares);
//   each iteration:  train on ctl.local_share() samples; ctl.Record(samples, compute_ms);
//                    if (ctl.AtWindowBoundary()) {
//                      RankFit mine = ctl.CloseWindow();
//                      all-gather `mine` (48 raw bytes) into `all` (rank order);
//                      Decision d = *ctl.Apply(all);  // same bytes -> same decision everywhere
//                    }
//
// Shares change only inside Apply(), i.e. between iterations. The controller is split in two so a
// simulator can drive many ranks cheaply with the very same code: RankObserver (one per rank,
// local measurements -> RankFit) and ShareController (the group decision, identical on every
// rank). Controller is one of each.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/tuner/cost_model.h"
#include "hetrun/tuner/family_pool.h"
#include "hetrun/tuner/solver.h"

namespace hetrun::tuner {

struct ControllerOptions {
  int64_t window = 10;  ///< iterations per window (W), >= 1
  /// Dead band: hold the split while its predicted iteration time is within this fraction of the
  /// best split's (noise in the fits must not move samples around).
  double dead_band = 0.01;
  /// ...widened to noise_sigmas * sqrt(2 ln R) standard errors of the noisiest rank's fitted time
  /// at its share (RankFit::sigma_ms / its time), R ranks: the predicted iteration is a maximum
  /// over R noisy fits, so a gap the measurements cannot tell from noise moves nothing.
  double noise_sigmas = 1;
  /// Minimum predicted gain: a move must shorten the predicted iteration by this fraction.
  double min_gain = 0.005;
  /// Step limit: at most this fraction of the batch changes rank in one window (>= 1 sample);
  /// larger moves are taken over several windows along the straight line to the target.
  double max_step = 0.5;
  /// Trust region: the move is also scaled down so no rank's share changes by more than this
  /// fraction of max(its share, the mean share) in one window. The fits are local lines; far from
  /// the share they were measured at, a knee or a steeper slope makes them wrong.
  double max_relative_step = 0.5;
  CostModelOptions cost_model;
  /// Ranks of one GPU family pool their fits before the solve (family_pool.h).
  FamilyPoolOptions family_pool;
};

/// Checks ranges (window >= 1, fractions in [0, 1], max_step > 0, forgetting in (0, 1]).
Status ValidateControllerOptions(const ControllerOptions& options);

/// One rank's measurements: the current window's observations and the cost model.
class RankObserver {
 public:
  /// `family`: the rank's pool key (FamilyPoolKey), carried in every RankFit; 0 = unknown.
  explicit RankObserver(CostModelOptions options = {}, int32_t family = 0);
  /// One iteration: samples >= 0, compute_ms finite and > 0.
  Status Record(int64_t samples, double compute_ms);
  /// Folds the window into the cost model and returns the record to exchange. `share` is the
  /// rank's share during the window (RankFit::n). c_ms == 0 means "no estimate yet" (no
  /// observation ever): the group then keeps its split.
  RankFit CloseWindow(int64_t cap, int64_t share);
  const CostModel& model() const { return model_; }
  /// Whether the last CloseWindow() detected a change of speed.
  bool last_window_changed() const { return last_changed_; }

 private:
  CostModel model_;
  int32_t family_ = 0;
  std::vector<Observation> window_;
  bool last_changed_ = false;
};

struct Decision {
  std::vector<int64_t> shares;      ///< the split for the next window (sum = batch)
  bool changed = false;             ///< shares differ from the previous window's
  double predicted_current_ms = 0;  ///< the previous split under the new fits
  double predicted_best_ms = 0;     ///< the exact optimum under the new fits
  double predicted_next_ms = 0;     ///< `shares` under the new fits
};

/// The group's split and the decision rule. Deterministic: the decision is a function of the
/// options, the batch, the current split and the gathered bytes only.
class ShareController {
 public:
  /// `initial` must have one share per rank, each >= 0, summing to `batch`.
  static Result<ShareController> Create(ControllerOptions options, int64_t batch,
                                        std::vector<int64_t> initial);

  /// `fits[r]` is rank r's record; every fits[r].n must equal shares()[r] (else
  /// kFailedPrecondition: the ranks disagree on the split). Infeasible caps: kInvalidArgument.
  /// The solve, the predictions and the dead band see the fits after family pooling.
  Result<Decision> Decide(std::span<const RankFit> fits);

  const std::vector<int64_t>& shares() const { return shares_; }
  int64_t batch() const { return batch_; }
  const ControllerOptions& options() const { return options_; }

 private:
  ShareController(ControllerOptions options, int64_t batch, std::vector<int64_t> shares)
      : options_(options), batch_(batch), shares_(std::move(shares)) {}
  double DeadBand(std::span<const RankFit> fits) const;
  int64_t StepLimit(std::span<const int64_t> best) const;
  ControllerOptions options_;
  int64_t batch_;
  std::vector<int64_t> shares_;
};

/// Moves from `from` toward `to` (same sums) by at most `limit` samples in total: each gaining
/// rank gets its proportional part of `limit`, each losing rank gives its part, rounded by
/// largest remainder (ties to the lower rank). Every result lies between from[r] and to[r].
std::vector<int64_t> LimitStep(std::span<const int64_t> from, std::span<const int64_t> to,
                               int64_t limit);

/// One rank's controller: its RankObserver plus the (replicated) ShareController.
class Controller {
 public:
  /// `family`: this rank's pool key (FamilyPoolKey of its GPU family; 0 = unknown).
  static Result<Controller> Create(ControllerOptions options, int64_t batch, int rank, int64_t cap,
                                   std::vector<int64_t> initial, int32_t family = 0);

  Status Record(int64_t samples, double compute_ms);
  /// True when `window` iterations were recorded since the last CloseWindow().
  bool AtWindowBoundary() const { return recorded_ >= group_.options().window; }
  RankFit CloseWindow();
  Result<Decision> Apply(std::span<const RankFit> gathered);

  int64_t local_share() const { return group_.shares()[static_cast<size_t>(rank_)]; }
  const std::vector<int64_t>& shares() const { return group_.shares(); }
  void set_cap(int64_t cap) { cap_ = cap; }

 private:
  Controller(ShareController group, int rank, int64_t cap, int32_t family)
      : group_(std::move(group)),
        observer_(group_.options().cost_model, family),
        rank_(rank),
        cap_(cap) {}
  ShareController group_;
  RankObserver observer_;
  int rank_;
  int64_t cap_;
  int64_t recorded_ = 0;
};

}  // namespace hetrun::tuner

#include "supervise/watchers/replan_wait.h"

#include <spdlog/spdlog.h>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"
#include "supervise/watchers/checkpoint_pointer.h"

namespace hetrun::launcher {

ReplanWait::ReplanWait(std::chrono::milliseconds grace_period, std::string checkpoint_dir)
    : grace_period_(grace_period), checkpoint_dir_(std::move(checkpoint_dir)) {
  if (!checkpoint_dir_.empty()) pointer_at_start_ = ReadCheckpointPointer(checkpoint_dir_);
}

// True for the wait: an 82, or a 0 during the wait (an ordinary failure then: a worker that
// finished cannot resume). Any other code falls through to the ordinary failure path; so does an
// 82 after a worker exited 0.
ReplanWait::ExitStep ReplanWait::OnWorkerExit(const WorkerFailure& exit,
                                              WatchClock::time_point now) {
  const bool replan =
      exit.kind == WorkerFailure::Kind::kExited && exit.exit_code == kExitReplanRequested;
  ExitStep result;
  if (replan && !first_ && !succeeded_rank_) {
    first_ = exit;
    deadline_ = now + grace_period_;
    spdlog::info(
        "rank {} exited with code 82 (re-plan requested): waiting up to {} for every local "
        "worker to exit 82",
        exit.rank, FormatDuration(grace_period_));
    result.step = Step::kOpened;
  } else if (replan && first_) {
    spdlog::debug("rank {} exited with code 82 (re-plan requested)", exit.rank);
    result.step = Step::kJoined;
  } else if (exit.exit_code == 0 && first_) {
    result.step = Step::kBroken;
    result.broken = *first_;
    result.broken.detail = "rank " + std::to_string(exit.rank) +
                           " exited with code 0 instead of 82 (every worker must exit 82)";
  } else if (replan && succeeded_rank_) {
    result.step = Step::kBroken;
    result.broken = exit;
    result.broken.detail = "rank " + std::to_string(*succeeded_rank_) +
                           " exited with code 0 before (every worker must exit 82)";
  } else if (exit.exit_code == 0 && !succeeded_rank_) {
    succeeded_rank_ = exit.rank;
  }
  if (result.step == Step::kBroken) {
    over_ = true;
    spdlog::error("{}; stopping the other workers", FailureSummary(result.broken));
  }
  return result;
}

void ReplanWait::OnJobReplan(const WorkerFailure& restart, WatchClock::time_point now) {
  first_ = restart;
  deadline_ = now + grace_period_;
  spdlog::info("{}: waiting up to {} for every local worker to exit 82", restart.detail,
               FormatDuration(grace_period_));
}

// Every local worker exited 82: a re-plan by restart when this attempt published a complete
// checkpoint (checkpoint_pointer.h), else an ordinary failure naming the folder and why.
WorkerFailure ReplanWait::Finish() {
  over_ = true;
  WorkerFailure failure = first_.value_or(WorkerFailure{});
  if (!checkpoint_dir_.empty()) {
    const std::string why = CheckpointPublishedSince(checkpoint_dir_, pointer_at_start_);
    if (!why.empty()) {
      failure.detail = "every local worker exited 82, but the checkpoint " + checkpoint_dir_ +
                       " is not complete: " + why;
      spdlog::error("{}", FailureSummary(failure));
      return failure;
    }
  }
  failure.replan_agreed = true;
  spdlog::info("every local worker exited with code 82 (re-plan requested){}",
               checkpoint_dir_.empty()
                   ? ""
                   : ", checkpoint " + checkpoint_dir_ + "/" +
                         ReadCheckpointPointer(checkpoint_dir_).value_or("") + " complete");
  return failure;
}

std::optional<WatchVerdict> ReplanWait::Check(WatchClock::time_point now,
                                              std::span<const WatchedWorker> workers) {
  if (!first_ || over_ || now < deadline_) return std::nullopt;
  over_ = true;
  WatchVerdict verdict;
  verdict.failure = *first_;
  std::string running;
  for (const WatchedWorker& worker : workers) {
    if (worker.running) running += (running.empty() ? "" : ", ") + std::to_string(worker.rank);
  }
  verdict.failure.detail = "rank(s) " + running + " did not exit within the grace period (" +
                           FormatDuration(grace_period_) + ") after it";
  spdlog::error("{}; stopping the other workers", FailureSummary(verdict.failure));
  return verdict;
}

std::optional<WatchClock::time_point> ReplanWait::NextCheck() const {
  if (!first_ || over_) return std::nullopt;
  return deadline_;
}

}  // namespace hetrun::launcher

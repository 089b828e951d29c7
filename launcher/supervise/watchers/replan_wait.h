// --replan-restart's wait (docs/how-to/replan-restart.md, docs/ARCHITECTURE.md §5.9): a worker's
// 82, or another node's re-plan reaching this node, opens a wait of up to the grace period for
// every local worker to exit 82; nothing is signalled meanwhile. Every local worker out with 82
// (Finish) is the agreed re-plan when this attempt published a complete checkpoint
// (supervise/watchers/checkpoint_pointer.h: DIR/hetrun-latest changed since the attempt started
// and names a sub-folder with DCP's `.metadata`).
// A 0 during the wait, an 82 after a 0, or a worker still running at the end of the wait (Check)
// is an ordinary failure, the others stopped; any other code takes the ordinary failure path.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "supervise/watchers/watcher.h"

namespace hetrun::launcher {

class ReplanWait : public Watcher {
 public:
  /// Made when the attempt starts: it reads the checkpoint pointer then, so that only a
  /// checkpoint published later counts.
  ReplanWait(std::chrono::milliseconds grace_period, std::string checkpoint_dir);

  enum class Step {
    kOrdinary,  ///< not part of a re-plan: the ordinary exit path
    kOpened,    ///< the first 82: the wait is open
    kJoined,    ///< another 82 during the wait
    kBroken,    ///< the wait failed (ExitStep::broken, logged): stop the other workers
  };
  struct ExitStep {
    Step step = Step::kOrdinary;
    WorkerFailure broken;
  };
  /// A worker's exit while the attempt is not stopping. After kOpened or kJoined, once no worker
  /// runs any more, the loop calls Finish.
  ExitStep OnWorkerExit(const WorkerFailure& exit, WatchClock::time_point now);

  /// Another node's re-plan reached this node (`restart`: its job restart, Kind::kJobRestart):
  /// the wait opens as after a local 82. Only when !open().
  void OnJobReplan(const WorkerFailure& restart, WatchClock::time_point now);

  /// Every local worker has exited during the wait: the failure that ends the attempt, with
  /// replan_agreed when the checkpoint is complete, else naming the folder (logged).
  WorkerFailure Finish();

  /// Whether a wait was opened this attempt (it stays so once over).
  bool open() const { return first_.has_value(); }

  /// The end of the wait with a worker still running: an ordinary failure naming them.
  std::optional<WatchVerdict> Check(WatchClock::time_point now,
                                    std::span<const WatchedWorker> workers) override;
  std::optional<WatchClock::time_point> NextCheck() const override;

 private:
  std::chrono::milliseconds grace_period_;
  std::string checkpoint_dir_;
  std::optional<std::string> pointer_at_start_;  ///< DIR/hetrun-latest when the attempt started
  std::optional<WorkerFailure> first_;           ///< the first 82 (or another node's re-plan)
  std::optional<int> succeeded_rank_;            ///< a worker that exited 0 (no re-plan then)
  WatchClock::time_point deadline_;              ///< the others' last moment to exit 82
  bool over_ = false;                            ///< finished, broken or timed out
};

}  // namespace hetrun::launcher

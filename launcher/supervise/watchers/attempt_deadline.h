// The attempt deadline (SupervisorOptions::attempt_deadline, --check-collectives' timeout,
// docs/ARCHITECTURE.md §5.11): an attempt still running past it is stopped like a hang, every
// worker at once, and ends as Kind::kDeadline with 75.
#pragma once

#include <chrono>

#include "supervise/watchers/watcher.h"

namespace hetrun::launcher {

class AttemptDeadline : public Watcher {
 public:
  /// The attempt started at `start`; `deadline` > 0.
  AttemptDeadline(WatchClock::time_point start, std::chrono::milliseconds deadline)
      : deadline_(deadline), end_(start + deadline) {}

  std::optional<WatchVerdict> Check(WatchClock::time_point now,
                                    std::span<const WatchedWorker> workers) override;
  std::optional<WatchClock::time_point> NextCheck() const override { return end_; }

 private:
  std::chrono::milliseconds deadline_;
  WatchClock::time_point end_;
};

}  // namespace hetrun::launcher

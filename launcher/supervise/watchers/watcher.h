// The periodic concerns of the supervisor's loop (docs/ARCHITECTURE.md §2.4), one per file in this
// folder: hang detection (heartbeat_watcher.h), fail-slow reports (fail_slow_watcher.h), the
// re-plan wait (replan_wait.h) and the attempt deadline (attempt_deadline.h). The loop
// (supervise/supervisor.cc) keeps spawning, reaping, signals and output; every turn that is not
// stopping it hands each watcher the time and the workers, and a watcher's verdict stops the
// attempt. A watcher never signals, reaps or sleeps: it reads its files, logs what it found and
// says when it next wants to be asked, so the loop's poll never sleeps past it.
#pragma once

#include <chrono>
#include <optional>
#include <span>

#include "supervise/report/failure_report.h"

namespace hetrun::launcher {

using WatchClock = std::chrono::steady_clock;

/// What a watcher sees of one worker of the attempt; workers keep their position for the whole
/// attempt, so a watcher keeps its own state per worker by that index.
struct WatchedWorker {
  int rank = 0;
  int local_rank = 0;
  bool running = false;
};

/// A watcher's finding that ends the attempt: the loop records `failure` (already logged by the
/// watcher), sends SIGTERM to every worker group and arms the grace deadline.
struct WatchVerdict {
  WorkerFailure failure;
  /// A hang or a deadline: a worker may be stopped (SIGSTOP'd), so SIGCONT follows the SIGTERM.
  bool stuck = false;
};

class Watcher {
 public:
  virtual ~Watcher() = default;
  /// One turn of the loop at `now` while the attempt is not stopping; `workers` in spawn order.
  /// A verdict stops the attempt (the loop asks no other watcher that turn).
  virtual std::optional<WatchVerdict> Check(WatchClock::time_point now,
                                            std::span<const WatchedWorker> workers) = 0;
  /// When Check next has something to do; nullopt when nothing is timed.
  virtual std::optional<WatchClock::time_point> NextCheck() const = 0;
};

}  // namespace hetrun::launcher

// Hang detection (--hang-timeout) on the monotonic clock: each worker's heartbeat file
// (HETRUN_HEARTBEAT, <run folder>/heartbeat/rank_<local rank>) is looked at at most every
// min(1 s, hang_timeout / 4); a beat is any change of the file (times or size) since hetrun last
// looked, and the silence is measured from when hetrun saw that change. File times are only
// compared with themselves, never with the wall clock, so a worker's clock, a wall-clock step or
// a file time in the future cannot hide a hang or fake one. A running worker silent for longer
// than hang_timeout is a hang (exit 75): every worker is stopped, stopped ones too. Until a
// worker's first beat the limit is the start-up timeout instead (--startup-timeout, as NVRx's
// initial timeout): model loading and a checkpoint's restore need not fit in the per-step one.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/watchers/watcher.h"

namespace hetrun::launcher {

class HeartbeatWatcher : public Watcher {
 public:
  /// `workers`: the attempt's worker count. `hang_timeout`: the longest silence after a worker's
  /// first beat (0: not watched); `startup_timeout`: the longest wait for the first beat after
  /// the worker started (0: hang_timeout). At least one of them > 0.
  HeartbeatWatcher(std::string run_dir, std::chrono::milliseconds hang_timeout, size_t workers,
                   std::chrono::milliseconds startup_timeout = std::chrono::milliseconds(0));

  /// Before worker `worker` starts: its heartbeat file, created (or emptied) with its times set to
  /// now, and its silence counted from `now`. Returns the path (the worker's HETRUN_HEARTBEAT).
  Result<std::string> Arm(size_t worker, int local_rank, WatchClock::time_point now);

  /// Seconds since worker `worker`'s last beat seen, -1 before Arm (SupervisionStatus).
  double SecondsSinceBeat(size_t worker, WatchClock::time_point now) const;

  std::optional<WatchVerdict> Check(WatchClock::time_point now,
                                    std::span<const WatchedWorker> workers) override;
  std::optional<WatchClock::time_point> NextCheck() const override { return next_check_; }

 private:
  /// What a heartbeat file looked like when last seen; a change is a beat.
  struct Mark {
    bool exists = false;
    timespec mtime{};
    timespec ctime{};
    off_t size = 0;
    bool operator==(const Mark& o) const;
    static Mark Of(const std::string& path);
  };
  struct Beat {
    std::string path;  ///< empty until Arm
    Mark mark;
    WatchClock::time_point last;  ///< when hetrun last saw the file change
    bool beaten = false;          ///< the file changed since Arm: the first beat was seen
  };

  std::string run_dir_;
  std::chrono::milliseconds hang_timeout_;
  std::chrono::milliseconds startup_timeout_;
  std::vector<Beat> beats_;
  WatchClock::time_point next_check_{};
};

}  // namespace hetrun::launcher

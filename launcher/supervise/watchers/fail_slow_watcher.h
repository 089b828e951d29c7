// Fail-slow reports (--fail-slow, docs/ARCHITECTURE.md §5.10): a worker the tuner finds fail-slow
// leaves a one-line report in the run folder (hetrun/tuner/rank_metrics.h, FailSlowReportPath).
// Once a second each running worker's report is read (never through a symlink, at most 1 KiB);
// a new one is logged once per attempt with this node and the worker's GPU, and under
// --fail-slow exit it stops every worker with 83 (Kind::kFailSlow, never restarted locally).
#pragma once

#include <string>
#include <vector>

#include "supervise/watchers/watcher.h"

namespace hetrun::launcher {

struct FailSlowWatch {
  std::string run_dir;
  bool exit = false;  ///< --fail-slow exit: a report stops the attempt (else it is only logged)
  int node_rank = 0;
  std::vector<std::string> gpu_names;  ///< per local rank ("" or absent: unknown)
};

class FailSlowWatcher : public Watcher {
 public:
  /// `workers`: the attempt's worker count.
  FailSlowWatcher(FailSlowWatch watch, size_t workers);

  /// Before worker `worker` (global rank `rank`) starts: a report an earlier attempt left is
  /// removed (an attempt starts healthy).
  void Arm(size_t worker, int rank);

  std::optional<WatchVerdict> Check(WatchClock::time_point now,
                                    std::span<const WatchedWorker> workers) override;
  std::optional<WatchClock::time_point> NextCheck() const override;

 private:
  struct Report {
    std::string path;   ///< empty until Arm
    bool seen = false;  ///< reported already this attempt
  };

  FailSlowWatch watch_;
  std::vector<Report> reports_;
  WatchClock::time_point next_check_{};
};

}  // namespace hetrun::launcher

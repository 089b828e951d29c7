// Per-rank figures for `hetrun run --metrics-port`: at each window boundary (not per step) the
// tuner loop writes this rank's latest figures to a small file in the run folder,
// $HETRUN_RUN_DIR/metrics/rank_<RANK>.prom, next to the heartbeat files; the launcher reads the
// files when /metrics is scraped. One "name value" line per figure of kRankMetrics, written to a
// temporary file and renamed, so a reader never sees half a file. Outside `hetrun run` (no
// HETRUN_RUN_DIR) nothing is written. C++ trainers (TunerLoop) and Python (hetrun.Tuner) both
// get it through WindowLoop.
#pragma once

#include <cstdint>
#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::tuner {

struct WindowReport;

struct RankMetricSpec {
  const char* name;  ///< exposed with a rank="R" label
  const char* type;  ///< gauge or counter
  const char* help;
};

/// Every figure a rank file may hold, in file order.
inline constexpr RankMetricSpec kRankMetrics[] = {
    {"hetrun_rank_step_seconds", "gauge", "Mean wall time per training step over the last window"},
    {"hetrun_rank_compute_seconds", "gauge", "Median compute time per step over the last window"},
    {"hetrun_rank_barrier_idle_fraction", "gauge",
     "Share of the step spent waiting at the gradient all-reduce"},
    {"hetrun_rank_share_samples", "gauge", "Samples of the global batch this rank takes now"},
    {"hetrun_rank_samples_per_second", "gauge", "This rank's samples per second last window"},
    {"hetrun_tuner_windows_total", "counter", "Tuner windows closed"},
    {"hetrun_tuner_share_changes_total", "counter", "Windows after which the split changed"},
    {"hetrun_tuner_efficiency", "gauge",
     "Optimal compute time over the slowest rank's (1 = the ideal split), 0 = unknown"},
    {"hetrun_job_samples_per_second", "gauge", "The job's samples per second last window"},
    {"hetrun_job_ideal_samples_per_second", "gauge",
     "Samples per second at the optimal split under the fitted models"},
    {"hetrun_tuner_overhead_fraction", "gauge", "The tuner's share of the window's wall time"},
    {"hetrun_rank_slowdown_ratio", "gauge",
     "Measured over expected time against the rank's GPU family (or its own history when alone "
     "in its family); 1 = as its kind"},
    {"hetrun_rank_fail_slow", "gauge", "1 while this rank is fail-slow (K windows in a row)"},
};

/// The file of global rank `rank` in `run_dir`.
std::string RankMetricsPath(const std::string& run_dir, int rank);

/// Where a rank reported fail-slow leaves its one-line report for `hetrun run --fail-slow`:
/// $HETRUN_RUN_DIR/fail_slow/rank_<RANK> (written once, atomically).
std::string FailSlowReportPath(const std::string& run_dir, int rank);

struct FailSlowVerdict;
/// The report's words after "rank N": "(family hopper): 266.3 ms at 274 samples, expected
/// 121.2 ms from its family median (2.20x) for 3 windows (window 22)".
std::string FailSlowText(const FailSlowVerdict& verdict, const std::string& family, int64_t windows,
                         int64_t window);

/// This rank's lines for `report` (`group_rank` indexes report.ranks / shares).
std::string RankMetricsText(const WindowReport& report, int group_rank, int64_t share_changes);

/// Writes the rank's file when running under `hetrun run` (HETRUN_RUN_DIR set).
class RankMetricsWriter {
 public:
  /// Path from HETRUN_RUN_DIR and RANK (else `fallback_rank`); none outside hetrun run.
  static RankMetricsWriter FromEnvironment(const Environment& env, int fallback_rank);
  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  /// Writes `text` (tmp + rename). A failure is returned once, then writing stops: figures for
  /// a dashboard must never stop training.
  Status Write(const std::string& text);

 private:
  std::string path_;
};

}  // namespace hetrun::tuner

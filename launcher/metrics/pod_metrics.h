// The text of /metrics for one pod (hetrun run --metrics-port): the launcher's own figures from
// the supervisor's status, the rendezvous and the preflight, then each local rank's runtime
// figures from its file in the run folder (hetrun/tuner/rank_metrics.h). Read at scrape time,
// bounded: a rank file over kMaxRankFileBytes, a name not in kRankMetrics or a value that is not
// a number is skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "supervise/supervisor.h"

namespace hetrun::launcher {

inline constexpr size_t kMaxRankFileBytes = 16 * 1024;

struct PodMetricsInput {
  const SupervisionStatus* status = nullptr;
  std::string run_dir;                     ///< where metrics/rank_<R>.prom are
  int nnodes = 1;                          ///< nodes of the job
  int nodes_joined = 1;                    ///< nodes met at the rendezvous (1 on one node)
  bool rendezvous = false;                 ///< the job has a rendezvous (more than one launcher)
  std::optional<uint64_t> memory_ceiling;  ///< job-wide bytes, when the job has GPUs
  int node_rank = 0;
  /// Each local rank's GPU model (gpu_model.h), the `gpu_model` label of per-rank samples; a
  /// local rank without one (no inventory, unknown model) gets no label.
  std::vector<std::string> local_gpu_models;
};

std::string RenderPodMetrics(const PodMetricsInput& input);

}  // namespace hetrun::launcher

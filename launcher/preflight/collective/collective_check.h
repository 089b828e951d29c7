// The collective check before training (`hetrun run --check-collectives`, docs/ARCHITECTURE.md
// §5.11, docs/how-to/collective-check.md): after the rendezvous and before the user's workers,
// one probe per local worker (`python -m hetrun.collective_check` with the workers' interpreter
// and environment) joins a job-wide process group and checks all-reduce and all-gather from 8 B
// to 8 MiB bit for bit, then measures the links. The probes run under the supervisor with a
// deadline; their findings are files in the run folder, read here into one verdict: 0, 84 (a
// wrong value), 75 (a timeout, or a collective that raised), 78 (the probe could not run, or
// proved a local fault such as a socket interface that does not exist; or a result file that
// is unusable: preflight/collective/collective_result.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {

struct CollectiveCheckOptions {
  bool enabled = false;                  ///< --check-collectives
  std::chrono::milliseconds timeout{0};  ///< --check-collectives-timeout; 0: the default formula
  std::string out;                       ///< --check-collectives-out FILE; empty: none
};

/// The deadline of the whole check: `timeout` when given, else 60 s + 100 ms x world size.
std::chrono::milliseconds CollectiveCheckDeadline(int world_size,
                                                  std::chrono::milliseconds timeout);

struct CollectiveCheckInput {
  CollectiveCheckOptions options;
  SupervisorOptions supervision;    ///< the run's; command, folders and budgets are replaced
  std::vector<WorkerSpec> workers;  ///< the first attempt's workers (ranks and environment)
  std::string python;               ///< the workers' interpreter
  int world_size = 1;
  bool writes_fragment = false;  ///< the job's member 0: writes --check-collectives-out
  /// With a job secret: the key the probes seal their store records with and derive their key
  /// prefix from (HETRUN_COLLECTIVE_CHECK_KEY, RecordAuth::DerivedKey); "" without one.
  std::string record_key;
};

struct CollectiveCheckVerdict {
  int exit_code = 0;          ///< 0, 84, 75, 78, or 128+N when hetrun was stopped
  std::string report;         ///< the one line for the log and the termination log
  std::string fragment_path;  ///< where the links fragment is (empty: none written)
};

/// Runs the probes and reads their findings. Errors are the supervisor's own (exit 70).
Result<CollectiveCheckVerdict> RunCollectiveCheck(const CollectiveCheckInput& input);

/// What --dry-run prints for the check.
std::string CollectiveCheckPlanText(const CollectiveCheckInput& input);

}  // namespace hetrun::launcher

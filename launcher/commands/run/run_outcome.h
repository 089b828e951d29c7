// How `hetrun run` ends (docs/ARCHITECTURE.md §2.4, §5.7): the pipeline's measurements left for
// node 0 and saved, the other nodes told how this node ended (node 0's final wait), then one exit
// code and the termination log.
#pragma once

#include <optional>
#include <string>

#include "commands/run/run_plan.h"
#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "rendezvous/job_rendezvous.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {

/// After supervision: tells the other nodes how this node ended (node 0 keeps the store up for
/// them, watching for signals meanwhile). Returns the exit code when it overrides the outcome:
/// a lost peer (75) or a shutdown signal during the final wait (128 + N).
Result<std::optional<int>> FinishRendezvous(JobRendezvous& rendezvous,
                                            const Result<SupervisorOutcome>& supervised,
                                            const Environment& env);

/// After supervision: the measurements (node 0 merges every node's), the other nodes told, and
/// the exit code: a lost peer or a shutdown signal during node 0's final wait, else the
/// supervisor's outcome (a failure logged and written to the termination log). `rendezvous` is
/// null on one launcher.
Result<int> FinishRun(const RunPlan& plan, JobRendezvous* rendezvous, const std::string& run_dir,
                      Result<SupervisorOutcome> supervised, const Environment& env);

}  // namespace hetrun::launcher

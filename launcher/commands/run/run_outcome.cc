#include "commands/run/run_outcome.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "commands/phase_signals.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/pipeline/measurements.h"
#include "supervise/measurement_gathering.h"
#include "supervise/report/termination_log.h"

namespace hetrun::launcher {
namespace {

/// The end of a run's measurements (supervise/measurement_gathering.h): the local rank files
/// merged; node r > 0 leaves its part for node 0 before FinishRendezvous. Never fails the run.
std::optional<pipeline::Measurements> LeaveMeasurements(JobRendezvous* rendezvous,
                                                        const std::string& run_dir) {
  std::optional<pipeline::Measurements> local = MergeRankFiles(run_dir);
  if (!rendezvous || !local) return local;
  if (std::optional<std::string> text = MeasurementsWithin(*local, JobRendezvous::kMaxLeftBytes)) {
    if (Status left = rendezvous->Leave("measurements", *text); !left.ok()) {
      spdlog::warn("measurements not sent to node 0: {}", left.message());
    }
  } else {
    spdlog::warn("measurements not sent to node 0: over {} bytes", JobRendezvous::kMaxLeftBytes);
  }
  return local;
}

/// After FinishRendezvous: node 0 merges every node's part; every node writes what it has.
void SaveRunMeasurements(JobRendezvous* rendezvous, const RunPlan& plan,
                         std::optional<pipeline::Measurements> local) {
  if (rendezvous && plan.topology.node_rank.value == 0 && plan.topology.nnodes.value > 1) {
    local = MergeNodeParts(local, rendezvous->CollectLeft("measurements"));
  }
  if (local) SaveMeasurements(*local, plan.supervision.run_dir, plan.measurements_out);
}

Result<int> ReportOutcome(Result<SupervisorOutcome> supervised, const Environment& env) {
  HETRUN_ASSIGN_OR_RETURN(SupervisorOutcome outcome, std::move(supervised));
  if (!outcome.failed) {
    spdlog::info(
        "every worker succeeded{}{}",
        outcome.restarts > 0 ? " after " + std::to_string(outcome.restarts) + " restart(s)" : "",
        outcome.replans > 0 ? " after " + std::to_string(outcome.replans) + " re-plan(s)" : "");
    return kExitOk;
  }
  std::string reason = TerminationReason(outcome.failure, kTerminationLogMaxBytes);
  spdlog::error("exiting with {}: {}", outcome.exit_code, FailureSummary(outcome.failure));
  if (Status logged = WriteTerminationLog(env, reason); !logged.ok()) {
    spdlog::warn("{}", logged.message());
  }
  return outcome.exit_code;
}

}  // namespace

Result<std::optional<int>> FinishRendezvous(JobRendezvous& rendezvous,
                                            const Result<SupervisorOutcome>& supervised,
                                            const Environment& env) {
  rendezvous.DisarmSigterm();
  HETRUN_ASSIGN_OR_RETURN(
      std::unique_ptr<PhaseSignals> signals,
      PhaseSignals::Install("node 0's final wait for the other nodes to finish"));
  rendezvous.set_interrupt([&signals] { return signals->Poll(); });
  std::optional<Status> peer = rendezvous.PeerFailure();
  rendezvous.Finish(
      peer ? kExitTransient
           : (supervised.ok() ? supervised->exit_code : ExitCodeFor(supervised.status())));
  rendezvous.set_interrupt({});
  // A lost peer node stopped this node's workers (JobRendezvous raised SIGTERM): report it as
  // the transient failure it is. It comes first: the SIGTERM hetrun sent itself for it may
  // still be pending here (and Volcano restarts the job for 75 as for 143).
  if (peer) return *peer;
  if (signals->Poll() != 0) return std::optional<int>(signals->Exit(env, ""));
  return std::optional<int>();
}

Result<int> FinishRun(const RunPlan& plan, JobRendezvous* rendezvous, const std::string& run_dir,
                      Result<SupervisorOutcome> supervised, const Environment& env) {
  std::optional<pipeline::Measurements> measured = LeaveMeasurements(rendezvous, run_dir);
  std::optional<int> code;
  if (rendezvous) {
    HETRUN_ASSIGN_OR_RETURN(code, FinishRendezvous(*rendezvous, supervised, env));
  }
  SaveRunMeasurements(rendezvous, plan, std::move(measured));
  if (code) return *code;
  return ReportOutcome(std::move(supervised), env);
}

}  // namespace hetrun::launcher

#include "commands/run/run_preflight.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "commands/phase_signals.h"
#include "commands/run/run_outcome.h"
#include "commands/run/worker_specs.h"
#include "commands/run/workers_per_gpu.h"
#include "hetrun/base/exit_code.h"
#include "preflight/collective/collective_check.h"
#include "rendezvous/record_auth.h"
#include "supervise/report/termination_log.h"

namespace hetrun::launcher {
namespace {

/// The seam for the checks that must pass before any training code runs (docs/ARCHITECTURE.md §2.2:
/// kernel images vs GPUs, the memory ceiling, rendezvous with the other nodes;
/// launcher/preflight/preflight.h). An error (exit 75, 78, 80, 81) means no worker is spawned.
Result<PreflightResult> Preflight(const Topology& topology,
                                  const std::optional<Inventory>& inventory,
                                  const PreflightOptions& preflight_options, const Environment& env,
                                  const std::vector<std::string>& command) {
  std::string ranks;
  for (int rank : topology.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  spdlog::info("starting {} worker(s), ranks [{}] of {}, node {} of {} ({}{}{}): {}",
               topology.ranks.size(), ranks, topology.world_size, topology.node_rank.value,
               topology.nnodes.value, topology.source,
               topology.per_process ? ", one worker per process" : "",
               inventory ? ", GPUs " + FormatFakeGpus(inventory->gpus) : "", command[0]);
  return RunPreflight(topology, inventory, preflight_options, env);
}

}  // namespace

Result<int> PreflightUnderSignals(const RunPlan& plan, const CommandContext& context,
                                  const std::vector<std::string>& command, PreflightResult* out) {
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<PhaseSignals> signals,
                          PhaseSignals::Install("the preflight"));
  PreflightOptions options = plan.preflight;
  options.interrupted = [&signals] { return signals->Poll(); };
  Result<PreflightResult> preflight =
      Preflight(plan.topology, plan.inventory, options, context.env, command);
  if (signals->Poll() != 0) {
    if (preflight.ok() && preflight->rendezvous) {
      preflight->rendezvous->Fail(UnavailableError("node " +
                                                   std::to_string(plan.topology.node_rank.value) +
                                                   " received a shutdown "
                                                   "signal during the preflight"));
      preflight->rendezvous->Finish(128 + signals->Poll());
    }
    return signals->Exit(context.env, preflight.ok() ? "" : preflight.status().message());
  }
  HETRUN_ASSIGN_OR_RETURN(*out, std::move(preflight));
  if (out->rendezvous) out->rendezvous->set_interrupt({});
  WarnWorkersShareProbedGpus(plan.local_workers, out->inventory);
  return -1;
}

Result<std::optional<int>> CheckCollectives(const RunPlan& plan, const PreflightResult& preflight,
                                            const Environment& env, const OneNodeStore* store) {
  CollectiveCheckInput input;
  input.options = plan.collective_check;
  input.supervision = plan.supervision;
  HETRUN_ASSIGN_OR_RETURN(input.workers, WorkerSpecs(plan, preflight, env)(0, false));
  input.python = plan.preflight.python;
  input.world_size = plan.topology.world_size;
  input.writes_fragment = MembershipOf(plan.topology).member == 0;
  if (preflight.rendezvous) {
    input.record_key = preflight.rendezvous->auth().DerivedKey("collective check");
  } else {
    HETRUN_ASSIGN_OR_RETURN(JobSecretSource secret, JobSecret(env));
    input.record_key = RecordAuth(secret.secret, plan.run_id).DerivedKey("collective check");
  }
  HETRUN_ASSIGN_OR_RETURN(CollectiveCheckVerdict verdict, RunCollectiveCheck(input));
  if (std::optional<Status> failed = store ? store->Failure() : std::nullopt) return *failed;
  if (verdict.exit_code == kExitOk) {
    spdlog::info("{}", verdict.report);
    return std::optional<int>();
  }
  spdlog::error("{}", verdict.report);
  if (Status logged = WriteTerminationLog(env, "hetrun: " + verdict.report); !logged.ok()) {
    spdlog::warn("{}", logged.message());
  }
  if (preflight.rendezvous) {
    SupervisorOutcome outcome;
    outcome.failed = true;
    outcome.exit_code = verdict.exit_code;
    HETRUN_ASSIGN_OR_RETURN(std::optional<int> code,
                            FinishRendezvous(*preflight.rendezvous, outcome, env));
    if (code) return code;
  }
  return std::optional<int>(verdict.exit_code);
}

}  // namespace hetrun::launcher

// `hetrun [run] [OPTIONS] -- COMMAND ARGS...`: resolve the job, run the preflight, then start
// and supervise the local workers (launcher/supervise/supervisor.h) and exit with the contract's
// code. Nothing heavy runs between exec and the first worker when no rendezvous is needed: no
// Python and no GPU probe unless --nproc-per-node auto asks for the GPU count; the one-node store
// binds its port at once and loads libtorch on its own thread beside the workers
// (rendezvous/one_node_store.h).
//
// Run reads as the phases of docs/ARCHITECTURE.md §2, in order; their parts are the room
// commands/run/: the options and the command line, the RunPlan read before the preflight and its
// pipeline inputs (resolve), the ports and the one-node store, the preflight and the collective
// check, the workers of each attempt (supervise), the metrics endpoint, the dry run, the outcome.
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/command.h"
#include "commands/run/dry_run.h"
#include "commands/run/pipeline_inputs.h"
#include "commands/run/run_command_line.h"
#include "commands/run/run_metrics.h"
#include "commands/run/run_options.h"
#include "commands/run/run_outcome.h"
#include "commands/run/run_plan.h"
#include "commands/run/run_preflight.h"
#include "commands/run/run_store.h"
#include "commands/run/worker_command.h"
#include "commands/run/worker_specs.h"
#include "hetrun/base/exit_code.h"
#include "supervise/child_process.h"
#include "supervise/run_folder.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {
namespace {

/// Resolve the job (docs/ARCHITECTURE.md §2.1): everything read before the preflight. A port
/// chosen here (port 0, --standalone) needs one node.
Result<RunPlan> ResolveRun(const RunCommandLine& line, const Environment& env) {
  HETRUN_ASSIGN_OR_RETURN(RunPlan plan, ReadRunPlan(line.parsed, env, line.command));
  if (line.free_port && plan.topology.nnodes.value > 1) {
    return UsageError("hetrun run: port 0 (a free port) needs one node; the job has " +
                      std::to_string(plan.topology.nnodes.value) + " nodes (" +
                      plan.topology.nnodes.source + "): give every node the same MASTER_PORT");
  }
  return plan;
}

/// One run folder per `hetrun run`, before anything that may need it (launcher/supervise/
/// run_folder.h; removed when Run returns), with --plan's layout file in it.
Result<std::unique_ptr<RunFolder>> MakeRunFolder(RunPlan& plan, const Environment& env) {
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<RunFolder> run_folder,
                          RunFolder::Create(RunFolderBase(env)));
  plan.supervision.run_dir = run_folder->path();
  if (plan.layout) {
    HETRUN_ASSIGN_OR_RETURN(plan.stage_vars["HETRUN_PLAN"],
                            WriteLayoutFile(*plan.layout, run_folder->path()));
  }
  return run_folder;
}

/// After a preflight that met the other launchers (docs/ARCHITECTURE.md §2.2 step 2): the job's
/// layout settled, no peer already lost, the rendezvous wired into the supervisor. An error tells
/// the other nodes (exit 78 for the layout, 75 for a lost peer).
Status JoinRendezvous(RunPlan& plan, JobRendezvous* rendezvous, const PreflightResult& preflight,
                      const std::string& run_dir) {
  if (Status settled = SettleJobLayout(plan, preflight.records, run_dir); !settled.ok()) {
    rendezvous->Finish(kExitConfig);
    return settled;
  }
  // A peer already lost: no worker starts (exit 75). One lost later reaches the supervisor as
  // SIGTERM once it reads signals from its signalfd (one lost in between is sent then).
  if (std::optional<Status> peer = rendezvous->PeerFailure()) {
    rendezvous->Finish(kExitTransient);
    return *peer;
  }
  plan.supervision.on_signals_ready = [rendezvous] { rendezvous->ArmSigterm(); };
  plan.supervision.restart_fd = rendezvous->restart_fd();
  plan.supervision.restart_reason = [rendezvous] { return rendezvous->RestartReason(); };
  plan.supervision.restart_is_replan = [rendezvous] { return rendezvous->RestartIsReplan(); };
  return Status::Ok();
}

}  // namespace

Result<int> commands::Run(const CommandContext& context) {
  // §2.1 Resolve the job.
  cxxopts::Options options = RunOptions();
  HETRUN_ASSIGN_OR_RETURN(RunCommandLine line, ParseRunCommandLine(options, context));
  if (line.help) {
    context.out << options.help({"topology", "supervision", "torchrun", "preflight", "health"});
    return kExitOk;
  }
  HETRUN_ASSIGN_OR_RETURN(RunPlan plan, ResolveRun(line, context.env));
  // The workers' program exists before anything starts, bad flags first
  // (commands/run/worker_command.h). A dry run only warns: its paths may be the pod's.
  const bool dry_run = line.parsed.count("dry-run") > 0;
  if (Status startable = CheckWorkerCommand(line.command, line.kind, context.env);
      !startable.ok()) {
    if (!dry_run) return RefuseWorkerCommand(startable, context.env);
    spdlog::warn("a run here would exit {}: {}", ExitCodeForSpawnError(startable),
                 startable.message());
  }
  if (dry_run) {
    HETRUN_RETURN_IF_ERROR(PrintDryRun(plan, context));
    return kExitOk;
  }
  // §2.2 Preflight: the store's port, the run folder and the metrics first, then the checks and
  // (nnodes > 1) the rendezvous.
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<OneNodeStore> store,
                          HoldOneNodeStore(plan, std::move(line.free_port_held)));
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<RunFolder> run_folder, MakeRunFolder(plan, context.env));
  PreflightResult preflight;
  SupervisionStatus status;
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics,
                          StartMetrics(line.parsed, context.env, plan, preflight, status));
  plan.supervision.status = &status;
  plan.supervision.poll_participant = metrics.get();
  HETRUN_ASSIGN_OR_RETURN(int stopped,
                          PreflightUnderSignals(plan, context, line.command, &preflight));
  if (stopped >= 0) return stopped;
  JobRendezvous* rendezvous = preflight.rendezvous.get();
  if (rendezvous) {
    HETRUN_RETURN_IF_ERROR(JoinRendezvous(plan, rendezvous, preflight, run_folder->path()));
  }
  // §2.4 Supervise: the store beside the workers, the collective check (§5.11), the workers.
  plan.supervision.node_rank = plan.topology.node_rank.value;
  for (const GpuInfo& gpu : preflight.inventory.gpus)
    plan.supervision.gpu_names.push_back(gpu.name);
  if (store) StartOneNodeStore(*store, plan);
  if (plan.collective_check.enabled) {
    HETRUN_ASSIGN_OR_RETURN(std::optional<int> failed,
                            CheckCollectives(plan, preflight, context.env, store.get()));
    if (failed) return *failed;
  }
  Result<SupervisorOutcome> supervised =
      Supervise(plan.supervision, WorkerSpecs(plan, preflight, context.env));
  if (std::optional<Status> failed = store ? store->Failure() : std::nullopt) return *failed;
  // The outcome: measurements, node 0's final wait, one exit code.
  return FinishRun(plan, rendezvous, run_folder->path(), std::move(supervised), context.env);
}

}  // namespace hetrun::launcher

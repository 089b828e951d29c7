#include "commands/run/dry_run.h"

#include <map>
#include <set>
#include <string>

#include "commands/run/run_store.h"
#include "commands/run/worker_specs.h"
#include "preflight/collective/collective_check.h"

namespace hetrun::launcher {
namespace {

/// A variable torchrun sets for every worker (printed by --dry-run even when hetrun inherited the
/// same value).
bool TorchrunSets(const std::string& name) {
  static const std::set<std::string> kNames = {"RANK",
                                               "WORLD_SIZE",
                                               "LOCAL_RANK",
                                               "LOCAL_WORLD_SIZE",
                                               "GROUP_RANK",
                                               "GROUP_WORLD_SIZE",
                                               "ROLE_NAME",
                                               "ROLE_RANK",
                                               "ROLE_WORLD_SIZE",
                                               "MASTER_ADDR",
                                               "MASTER_PORT",
                                               "TORCH_NCCL_ASYNC_ERROR_HANDLING"};
  return kNames.contains(name) || name.rfind("TORCHELASTIC_", 0) == 0;
}

/// The variables the supervisor sets in the run folder when it starts a worker (made by a run
/// only), as placeholders.
void PrintRunFolderVariables(const RunPlan& plan, const WorkerSpec& worker, std::ostream& out) {
  out << "HETRUN_RUN_DIR=<run folder, made at start>\n";
  if (plan.supervision.WatchesHeartbeats()) {
    out << "HETRUN_HEARTBEAT=<run folder>/heartbeat file of local rank " << worker.local_rank
        << "\n";
  }
  if (plan.layout) out << "HETRUN_PLAN=<run folder>/the layout file\n";
  out << "TORCHELASTIC_ERROR_FILE=<run folder>/attempt_0/rank_" << worker.rank << "/error.json\n";
}

}  // namespace

Status PrintDryRun(RunPlan& plan, const CommandContext& context) {
  // This node's preflight, as a run makes it, without meeting the other nodes.
  PreflightOptions options = plan.preflight;
  options.local_only = true;
  HETRUN_ASSIGN_OR_RETURN(PreflightResult preflight,
                          RunPreflight(plan.topology, plan.inventory, options, context.env));
  const int members = MembershipOf(plan.topology).members;
  plan.agent_store = members > 1 || StoreWouldBeHosted(plan);
  HETRUN_ASSIGN_OR_RETURN(std::vector<WorkerSpec> workers,
                          WorkerSpecs(plan, preflight, context.env)(0, false));
  if (plan.collective_check.enabled) {
    CollectiveCheckInput check;
    check.options = plan.collective_check;
    check.python = plan.preflight.python;
    check.world_size = plan.topology.world_size;
    context.out << CollectiveCheckPlanText(check) << "\n";
  }
  if (members > 1 && preflight.ceiling) {
    context.out << "# " << members
                << " launchers: the memory ceiling below is this node's GPUs' only; a run's is "
                   "the minimum over every node's GPUs (after the rendezvous)\n";
  }
  for (const WorkerSpec& worker : workers) {
    context.out << "# rank " << worker.rank << " (local rank " << worker.local_rank
                << "): hetrun's environment plus\n"
                << "command:";
    for (const std::string& arg : plan.supervision.command) context.out << " " << arg;
    context.out << "\n";
    const std::map<std::string, std::string>& own = context.env.all();
    for (const auto& [name, value] : worker.env) {
      auto it = own.find(name);
      if (it == own.end() || it->second != value || TorchrunSets(name)) {
        context.out << name << "=" << value << "\n";
      }
    }
    PrintRunFolderVariables(plan, worker, context.out);
    context.out << "\n";
  }
  return Status::Ok();
}

}  // namespace hetrun::launcher

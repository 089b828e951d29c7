#include "commands/run/dry_run.h"

#include <map>
#include <set>
#include <string>

#include "commands/run/worker_specs.h"
#include "preflight/collective_check.h"

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

}  // namespace

Status PrintDryRun(const RunPlan& plan, const CommandContext& context) {
  PreflightResult no_preflight;
  HETRUN_ASSIGN_OR_RETURN(std::vector<WorkerSpec> workers,
                          WorkerSpecs(plan, no_preflight, context.env)(0, false));
  if (plan.collective_check.enabled) {
    CollectiveCheckInput check;
    check.options = plan.collective_check;
    check.python = plan.preflight.python;
    check.world_size = plan.topology.world_size;
    context.out << CollectiveCheckPlanText(check) << "\n";
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
    context.out << "HETRUN_RUN_DIR=<run folder, made at start>\n"
                   "TORCHELASTIC_ERROR_FILE=<run folder>/attempt_0/rank_"
                << worker.rank << "/error.json\n\n";
  }
  return Status::Ok();
}

}  // namespace hetrun::launcher

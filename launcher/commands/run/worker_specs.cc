#include "commands/run/worker_specs.h"

#include <spdlog/spdlog.h>

#include <map>
#include <memory>

#include "commands/run/run_store.h"
#include "hetrun/pipeline/layout_state.h"
#include "rendezvous/attempt_store.h"
#include "supervise/engine_args_env.h"
#include "supervise/worker_env.h"

namespace hetrun::launcher {
namespace {

/// The layout a restart attempt's workers run: live layer moves rewrite the layout file
/// (`revision` > 0), so after the first attempt it is read back from there (the first attempt,
/// or a file that no longer reads, keeps the layout as written).
std::optional<pipeline::JobLayout> AttemptLayout(const RunPlan& plan, int restart_count) {
  auto path = plan.stage_vars.find("HETRUN_PLAN");
  if (restart_count == 0 || !plan.layout || path == plan.stage_vars.end()) return plan.layout;
  Result<pipeline::JobLayout> current = pipeline::LoadJobLayout(path->second);
  if (!current.ok()) {
    spdlog::warn(
        "restart: the layout file does not read ({}); the workers get the layout as "
        "first written",
        current.status().ToString());
    return plan.layout;
  }
  if (current->revision != plan.layout->revision) {
    spdlog::info("restart: the layout file is at revision {} (live layer moves)",
                 current->revision);
  }
  return std::move(*current);
}

/// What the attempt barrier compares across nodes: the split and revision to read, and a digest
/// of the whole layout text (replicas, shares and names differ too).
std::string LayoutDescription(const std::optional<pipeline::JobLayout>& layout) {
  if (!layout) return "";
  const std::string text = pipeline::JobLayoutJson(*layout);
  uint64_t digest = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) digest = (digest ^ c) * 1099511628211ull;
  return fmt::format("layout revision {}, split {} (digest {:016x})", layout->revision,
                     pipeline::SplitText(*layout), digest);
}

/// Where the workers of attempt `restart_count` meet (rendezvous/attempt_store.h): the first
/// attempt at MASTER_PORT as set up; every later one at the store node 0's hetrun opens for it
/// (one node with hetrun's store, or several nodes), the other nodes learning its port at the
/// attempt barrier, which also checks the layouts. nullopt: MASTER_PORT as for the first.
Result<std::optional<AttemptMeeting>> MeetingOf(const RunPlan& plan,
                                                const PreflightResult& preflight,
                                                AttemptStores& stores, int restart_count,
                                                const std::string& layout, bool replan) {
  if (restart_count == 0) return std::optional<AttemptMeeting>();
  const bool node0 = MembershipOf(plan.topology).member == 0;
  std::optional<AttemptMeeting> mine;
  if (node0 && (plan.agent_store || preflight.rendezvous)) {
    HETRUN_ASSIGN_OR_RETURN(AttemptMeeting opened, stores.Open());
    mine = opened;
  }
  std::optional<AttemptMeeting> meeting = mine;
  if (preflight.rendezvous) {
    HETRUN_ASSIGN_OR_RETURN(
        meeting, preflight.rendezvous->BeginAttempt(restart_count, layout, replan, mine));
  }
  stores.Commit();
  if (meeting) {
    spdlog::info("attempt {}: the workers meet at a new store on port {} ({})", restart_count,
                 meeting->port, meeting->hosted ? "node 0's hetrun hosts it" : "rank 0 hosts it");
  }
  return meeting;
}

}  // namespace

WorkerSpecsFn WorkerSpecs(const RunPlan& plan, const PreflightResult& preflight,
                          const Environment& env) {
  WorkerEnvOptions env_options;
  env_options.max_restarts = plan.supervision.max_restarts;
  env_options.run_id = plan.run_id;
  env_options.role = plan.role;
  env_options.signals_to_handle = plan.signals_to_handle;
  env_options.inventory = plan.inventory ? &*plan.inventory : nullptr;
  env_options.nvml_families = plan.nvml_families;
  env_options.nvml_models = plan.nvml_models;
  auto stores = std::make_shared<AttemptStores>(plan.topology.master_addr.value,
                                                TorchDirOf(plan.preflight.python),
                                                spdlog::should_log(spdlog::level::debug));
  return [&plan, &preflight, &env, env_options, stores](
             int restart_count, bool replan) -> Result<std::vector<WorkerSpec>> {
    // Multi-node: every node stops and starts each attempt together (job-wide restarts), so
    // TORCHELASTIC_RESTART_COUNT agrees. Each node reads its own layout file; the barrier
    // checks that all read the same one.
    const std::optional<pipeline::JobLayout> layout = AttemptLayout(plan, restart_count);
    HETRUN_ASSIGN_OR_RETURN(
        std::optional<AttemptMeeting> meeting,
        MeetingOf(plan, preflight, *stores, restart_count, LayoutDescription(layout), replan));
    WorkerEnvOptions attempt = env_options;
    attempt.restart_count = restart_count;
    const std::map<std::string, std::string> engine_args =
        layout ? EngineArgsEnvironment(*layout, plan.torchtitan_names, restart_count)
               : std::map<std::string, std::string>();
    std::vector<WorkerSpec> workers;
    for (size_t i = 0; i < plan.local_workers; ++i) {
      std::map<std::string, std::string> vars = WorkerEnvironment(env, plan.topology, i, attempt);
      HETRUN_ASSIGN_OR_RETURN(auto additions,
                              preflight.WorkerAdditions(env, plan.topology.local_ranks[i]));
      for (auto& [name, value] : additions) vars[name] = value;
      for (const auto& [name, value] : plan.stage_vars) vars[name] = value;
      if (plan.agent_store) vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
      if (meeting) {
        vars["MASTER_PORT"] = std::to_string(meeting->port);
        vars["TORCHELASTIC_USE_AGENT_STORE"] = meeting->hosted ? "True" : "False";
      }
      if (layout) {
        const int stage = layout->StageOf(plan.topology.ranks[i]);
        const pipeline::StageLayout& entry = layout->stages[static_cast<size_t>(stage)];
        vars["HETRUN_STAGE"] = std::to_string(stage);
        vars["HETRUN_STAGE_LAYERS"] =
            std::to_string(entry.first_layer) + ":" + std::to_string(entry.layers);
        for (auto& [name, value] : engine_args) vars[name] = value;
      }
      workers.push_back({plan.topology.ranks[i], plan.topology.local_ranks[i], std::move(vars),
                         plan.worker_cpus[i]});
    }
    return workers;
  };
}

}  // namespace hetrun::launcher

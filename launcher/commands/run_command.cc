// `hetrun [run] [OPTIONS] -- COMMAND ARGS...`: resolve the job, run the preflight, then start
// and supervise the local workers (launcher/supervise/supervisor.h) and exit with the contract's
// code. Nothing heavy runs between exec and the first worker when no rendezvous is needed: no
// Python, no libtorch, and no GPU probe unless --nproc-per-node auto asks for the GPU count.
#include <spdlog/spdlog.h>

#include <cxxopts.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/base/logging.h"
#include "hetrun/base/units.h"
#include "hetrun/job/inventory.h"
#include "hetrun/job/topology.h"
#include "preflight/preflight.h"
#include "preflight/stage_env.h"
#include "preflight/topology_inputs.h"
#include "supervise/cpu_binding.h"
#include "supervise/run_folder.h"
#include "supervise/supervisor.h"
#include "supervise/termination_log.h"
#include "supervise/worker_env.h"

namespace hetrun::launcher {
namespace {

/// A duration flag, else its HETRUN_* variable, else `fallback`. Errors name the flag or variable.
Result<std::chrono::milliseconds> DurationSetting(const cxxopts::ParseResult& parsed,
                                                  const std::string& flag, const Environment& env,
                                                  std::string_view variable,
                                                  std::chrono::milliseconds fallback) {
  if (parsed.count(flag)) {
    std::string text = parsed[flag].as<std::string>();
    Result<std::chrono::milliseconds> value = ParseDuration(text);
    if (!value.ok())
      return UsageError("--" + flag + " '" + text + "': " + value.status().message());
    return *value;
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<std::chrono::milliseconds> from_env,
                          env.GetDuration(variable));
  return from_env.value_or(fallback);
}

/// --hang-timeout, else HETRUN_HANG_TIMEOUT, else off (0). A value given that rounds to 0 ms is
/// an error, not "off": leave both unset to turn hang detection off.
Result<std::chrono::milliseconds> HangTimeoutSetting(const cxxopts::ParseResult& parsed,
                                                     const Environment& env) {
  HETRUN_ASSIGN_OR_RETURN(std::chrono::milliseconds value,
                          DurationSetting(parsed, "hang-timeout", env, "HETRUN_HANG_TIMEOUT",
                                          std::chrono::milliseconds(-1)));
  if (value.count() > 0) return value;
  if (value.count() < 0) return std::chrono::milliseconds(0);  // not given: off
  if (parsed.count("hang-timeout")) {
    return UsageError("--hang-timeout '" + parsed["hang-timeout"].as<std::string>() +
                      "' is 0 ms (rounded): give at least 1ms, or leave it unset to turn hang "
                      "detection off");
  }
  return InvalidArgumentError("HETRUN_HANG_TIMEOUT=" + env.Get("HETRUN_HANG_TIMEOUT").value_or("") +
                              " (environment) is 0 ms (rounded): give at least 1ms, or unset it "
                              "to turn hang detection off");
}

Result<int> MaxRestartsSetting(const cxxopts::ParseResult& parsed, const Environment& env) {
  if (parsed.count("max-restarts")) {
    std::string text = parsed["max-restarts"].as<std::string>();
    Result<int64_t> value = ParseIntInRange(text, 0, 1000);
    if (!value.ok()) {
      return UsageError("--max-restarts '" + text + "': " + value.status().message());
    }
    return static_cast<int>(*value);
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> from_env, env.GetInt("HETRUN_MAX_RESTARTS"));
  if (from_env && (*from_env < 0 || *from_env > 1000)) {
    return InvalidArgumentError("HETRUN_MAX_RESTARTS=" + std::to_string(*from_env) +
                                " (environment): expected 0..1000");
  }
  return static_cast<int>(from_env.value_or(0));
}

/// The GPUs of this node when they are declared (--fake-gpus, HETRUN_FAKE_GPUS); nullopt when
/// only the probe could tell. The probe is not run here: it costs a CUDA context, and the
/// preflight that needs it (arch check, memory ceiling) owns that step.
Result<std::optional<Inventory>> DeclaredInventory(const Environment& env,
                                                   std::string_view fake_flag) {
  if (fake_flag.empty() && !env.Get("HETRUN_FAKE_GPUS")) return std::optional<Inventory>();
  HETRUN_ASSIGN_OR_RETURN(Inventory inventory, LocalInventory(env, fake_flag, nullptr));
  return std::optional<Inventory>(std::move(inventory));
}

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

/// --cpu-bind, else HETRUN_CPU_BIND, else none.
Result<CpuBind> CpuBindSetting(const cxxopts::ParseResult& parsed, const Environment& env) {
  if (parsed.count("cpu-bind")) {
    std::string text = parsed["cpu-bind"].as<std::string>();
    Result<CpuBind> mode = ParseCpuBind(text);
    if (!mode.ok()) return UsageError("--cpu-bind: " + mode.status().message());
    return *mode;
  }
  std::optional<std::string> text = env.Get("HETRUN_CPU_BIND");
  if (!text) return CpuBind::kNone;
  Result<CpuBind> mode = ParseCpuBind(*text);
  if (!mode.ok()) {
    return InvalidArgumentError("HETRUN_CPU_BIND (environment): " + mode.status().message());
  }
  return *mode;
}

/// The CPUs of each local worker under `mode` (empty lists: no binding), logged once.
Result<std::vector<std::vector<int>>> WorkerCpus(CpuBind mode, const Topology& topology,
                                                 size_t local_workers) {
  std::vector<std::vector<int>> none(local_workers);
  if (mode == CpuBind::kNone) return none;
  if (topology.per_process) {
    spdlog::info("--cpu-bind spread ignored: under {} each process is one worker, placed by it",
                 topology.source);
    return none;
  }
  HETRUN_ASSIGN_OR_RETURN(std::vector<int> cpus, AllowedCpus());
  std::vector<std::vector<int>> bound = SpreadCpus(cpus, static_cast<int>(local_workers));
  std::string text;
  for (size_t i = 0; i < bound.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(topology.local_ranks[i]) + ":" + CpuListText(bound[i]);
  }
  spdlog::info("cpu binding (spread over CPUs {}), local rank:CPUs {}", CpuListText(cpus), text);
  return bound;
}

}  // namespace

Result<int> commands::Run(const CommandContext& context) {
  cxxopts::Options options("hetrun run",
                           "Start the local workers of a training job and supervise them.");
  options.custom_help("[OPTIONS] -- COMMAND [ARGS...]   (run is the default subcommand)");
  AddTopologyOptions(options);
  options.add_options("supervision")(
      "tee", "prefix every worker output line with [rank R] on the console")(
      "log-dir", "write one log file per rank (rank_R.log; rank_R.restart_N.log after restarts)",
      cxxopts::value<std::string>())(
      "grace-period",
      "SIGTERM -> SIGKILL escalation (30, 30s, 5m); keep it below the pod's "
      "terminationGracePeriodSeconds (HETRUN_GRACE_PERIOD, default 30s)",
      cxxopts::value<std::string>())(
      "hang-timeout",
      "a worker that does not beat (HETRUN_HEARTBEAT) for this long is hung: exit 75 "
      "(HETRUN_HANG_TIMEOUT, default off; at least 1ms when given)",
      cxxopts::value<std::string>())(
      "max-restarts",
      "restart the local group after a worker is killed by a signal, hangs or exits 75, at most "
      "N times (HETRUN_MAX_RESTARTS, default 0)",
      cxxopts::value<std::string>())(
      "cpu-bind",
      "none, or spread: deal the CPUs hetrun may use out to the local workers, a block each "
      "(one CPU each, shared in turn, when workers outnumber CPUs) (HETRUN_CPU_BIND, default "
      "none)",
      cxxopts::value<std::string>())("run-id", "TORCHELASTIC_RUN_ID for the workers (default none)",
                                     cxxopts::value<std::string>()->default_value("none"))(
      "h,help", "this text");
  AddPreflightOptions(options);
  std::vector<std::string> command;
  HETRUN_ASSIGN_OR_RETURN(cxxopts::ParseResult parsed,
                          ParseSubcommandOptions(options, context.args, &command));
  if (parsed.count("help")) {
    context.out << options.help({"topology", "supervision", "preflight"});
    return kExitOk;
  }
  if (!parsed.unmatched().empty()) {
    return UsageError("hetrun run: unexpected argument '" + parsed.unmatched()[0] +
                      "' (put the command after a lone --: hetrun run [OPTIONS] -- COMMAND)");
  }
  if (command.empty()) {
    return UsageError("hetrun run: no command (usage: hetrun run [OPTIONS] -- COMMAND [ARGS...])");
  }

  SupervisorOptions supervision;
  supervision.command = command;
  supervision.tee = parsed.count("tee") > 0;
  if (parsed.count("log-dir")) supervision.log_dir = parsed["log-dir"].as<std::string>();
  HETRUN_ASSIGN_OR_RETURN(supervision.grace_period,
                          DurationSetting(parsed, "grace-period", context.env,
                                          "HETRUN_GRACE_PERIOD", std::chrono::seconds(30)));
  HETRUN_ASSIGN_OR_RETURN(supervision.hang_timeout, HangTimeoutSetting(parsed, context.env));
  HETRUN_ASSIGN_OR_RETURN(supervision.max_restarts, MaxRestartsSetting(parsed, context.env));
  HETRUN_ASSIGN_OR_RETURN(CpuBind cpu_bind, CpuBindSetting(parsed, context.env));

  TopologyOptionValues topology_options = ReadTopologyOptions(parsed);
  HETRUN_ASSIGN_OR_RETURN(
      TopologyInputs inputs,
      GatherTopologyInputs(context.env, topology_options.flags, topology_options.fake_gpus));
  HETRUN_ASSIGN_OR_RETURN(Topology topology, ResolveTopology(inputs));
  if (topology.ranks.empty() || topology.ranks.size() != topology.local_ranks.size()) {
    return InternalError("resolved topology has no local workers");
  }
  // Under mpirun or srun this process is one worker: run exactly that one, with its given rank.
  size_t local_workers = topology.per_process ? 1 : topology.ranks.size();
  SetLogIdentity(topology.node_rank.value, topology.per_process ? topology.ranks[0] : -1);
  HETRUN_ASSIGN_OR_RETURN(std::optional<Inventory> inventory,
                          DeclaredInventory(context.env, topology_options.fake_gpus));
  HETRUN_ASSIGN_OR_RETURN(PreflightOptions preflight_options,
                          ReadPreflightOptions(parsed, context.env));
  // Local settings are checked before the preflight, which may join the other nodes.
  HETRUN_ASSIGN_OR_RETURN(std::vector<std::vector<int>> worker_cpus,
                          WorkerCpus(cpu_bind, topology, local_workers));
  std::optional<int> task_index;
  if (topology.task_index) task_index = topology.task_index->value;
  HETRUN_ASSIGN_OR_RETURN(PodStage pod_stage, PodStageVariables(context.env, task_index));
  std::map<std::string, std::string>& stage_vars = pod_stage.vars;
  if (!stage_vars.empty()) {
    spdlog::info("pipeline stage {} (entry {} of HETRUN_STAGE={}){}", stage_vars["HETRUN_STAGE"],
                 pod_stage.task_index, context.env.Get("HETRUN_STAGE").value_or(""),
                 stage_vars.contains("HETRUN_STAGE_LAYERS")
                     ? ", layers " + stage_vars["HETRUN_STAGE_LAYERS"]
                     : std::string());
  }
  // One run folder per `hetrun run`, before anything that may need it (launcher/supervise/
  // run_folder.h); removed when this function returns.
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<RunFolder> run_folder,
                          RunFolder::Create(RunFolderBase(context.env)));
  supervision.run_dir = run_folder->path();
  HETRUN_ASSIGN_OR_RETURN(PreflightResult preflight,
                          Preflight(topology, inventory, preflight_options, context.env, command));

  WorkerEnvOptions env_options;
  env_options.max_restarts = supervision.max_restarts;
  env_options.run_id = parsed["run-id"].as<std::string>();
  env_options.inventory = inventory ? &*inventory : nullptr;
  auto specs = [&](int restart_count) -> Result<std::vector<WorkerSpec>> {
    WorkerEnvOptions attempt = env_options;
    attempt.restart_count = restart_count;
    std::vector<WorkerSpec> workers;
    for (size_t i = 0; i < local_workers; ++i) {
      std::map<std::string, std::string> env = WorkerEnvironment(context.env, topology, i, attempt);
      HETRUN_ASSIGN_OR_RETURN(auto additions,
                              preflight.WorkerAdditions(context.env, topology.local_ranks[i]));
      for (auto& [name, value] : additions) env[name] = value;
      for (const auto& [name, value] : stage_vars) env[name] = value;
      workers.push_back(
          {topology.ranks[i], topology.local_ranks[i], std::move(env), worker_cpus[i]});
    }
    return workers;
  };
  if (preflight.rendezvous) {
    // A peer already lost: no worker starts (exit 75). One lost later reaches the supervisor as
    // SIGTERM once it reads signals from its signalfd (one lost in between is sent then).
    if (std::optional<Status> peer = preflight.rendezvous->PeerFailure()) {
      preflight.rendezvous->Finish(kExitTransient);
      return *peer;
    }
    supervision.on_signals_ready = [&preflight] { preflight.rendezvous->ArmSigterm(); };
  }
  Result<SupervisorOutcome> supervised = Supervise(supervision, specs);
  if (preflight.rendezvous) {
    // A lost peer node stops this node's workers (JobRendezvous raises SIGTERM): report it as the
    // transient failure it is, and tell the other nodes how this node ended.
    if (std::optional<Status> peer = preflight.rendezvous->PeerFailure()) {
      preflight.rendezvous->Finish(kExitTransient);
      return *peer;
    }
    preflight.rendezvous->Finish(supervised.ok() ? supervised->exit_code
                                                 : ExitCodeFor(supervised.status()));
  }
  HETRUN_ASSIGN_OR_RETURN(SupervisorOutcome outcome, std::move(supervised));
  if (!outcome.failed) {
    spdlog::info(
        "every worker succeeded{}",
        outcome.restarts > 0 ? " after " + std::to_string(outcome.restarts) + " restart(s)" : "");
    return kExitOk;
  }
  std::string reason = TerminationReason(outcome.failure, kTerminationLogMaxBytes);
  spdlog::error("exiting with {}: {}", outcome.exit_code, FailureSummary(outcome.failure));
  if (Status logged = WriteTerminationLog(context.env, reason); !logged.ok()) {
    spdlog::warn("{}", logged.message());
  }
  return outcome.exit_code;
}

}  // namespace hetrun::launcher

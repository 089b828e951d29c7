#include "commands/run/run_plan.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "commands/run/pipeline_inputs.h"
#include "commands/run/workers_per_gpu.h"
#include "commands/setting.h"
#include "commands/torchrun_args.h"
#include "hetrun/base/logging.h"
#include "hetrun/base/units.h"
#include "hetrun/plan/model_spec.h"
#include "preflight/default_python.h"
#include "preflight/nvml_families.h"
#include "preflight/stage_env.h"
#include "preflight/topology_inputs.h"
#include "supervise/cpu_binding.h"
#include "supervise/run_folder.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;

/// Extra time on top of the grace period and node 0's final wait that the pod's
/// terminationGracePeriodSeconds should leave (process exit, log flushing).
constexpr milliseconds kPodGraceMargin{std::chrono::seconds(10)};

/// The GPUs of this node when they are declared (--fake-gpus, HETRUN_FAKE_GPUS); nullopt when
/// only the probe could tell. The probe is not run here: it costs a CUDA context, and the
/// preflight that needs it (arch check, memory ceiling) owns that step.
Result<std::optional<Inventory>> DeclaredInventory(const Environment& env,
                                                   std::string_view fake_flag) {
  if (fake_flag.empty() && !env.Get("HETRUN_FAKE_GPUS")) return std::optional<Inventory>();
  HETRUN_ASSIGN_OR_RETURN(Inventory inventory, LocalInventory(env, fake_flag, nullptr));
  return std::optional<Inventory>(std::move(inventory));
}

/// Real GPUs, no family or model from the job: NVML's families and models for
/// HETRUN_GPU_FAMILY and HETRUN_GPU_MODEL (no CUDA context; its cost is logged). A failure only
/// means the workers get neither: logged, not fatal.
NvmlFamilies GpuFamiliesFromNvml() {
  Result<std::optional<NvmlFamilies>> nvml = ReadNvmlFamilies();
  if (!nvml.ok()) {
    spdlog::warn("HETRUN_GPU_FAMILY and HETRUN_GPU_MODEL not set for the workers: {}",
                 nvml.status().ToString());
    return {};
  }
  if (!nvml->has_value()) return {};
  std::string list;
  for (size_t i = 0; i < (*nvml)->families.size(); ++i) {
    const std::string& model = (*nvml)->models.at(i);
    list += (i ? "," : "") + (*nvml)->families[i] + "/" + (model.empty() ? "unknown" : model);
  }
  spdlog::info("GPU families/models from NVML in {:.1f} ms: [{}]", (*nvml)->elapsed_ms, list);
  return std::move(**nvml);
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

/// --tee, --redirects and --local-ranks-filter (torchrun's meanings).
Status ReadStreamOptions(const cxxopts::ParseResult& parsed, const Environment& env,
                         SupervisorOptions* supervision) {
  for (const char* flag : {"tee", "redirects"}) {
    if (!parsed.count(flag)) continue;
    Result<StreamMask> mask = ParseStreamMask(parsed[flag].as<std::string>());
    if (!mask.ok()) return UsageError(std::string("--") + flag + ": " + mask.status().message());
    (std::string_view(flag) == "tee" ? supervision->tee_streams : supervision->redirect_streams) =
        *mask;
  }
  if (parsed.count("local-ranks-filter")) {
    HETRUN_ASSIGN_OR_RETURN(supervision->console_local_ranks,
                            ParseLocalRanks(parsed["local-ranks-filter"].as<std::string>()));
  }
  if (supervision->tee_streams.any() || supervision->redirect_streams.any()) {
    // Default: the user's private run base (never a folder shared by all users), logs/ below it.
    supervision->stream_log_root =
        supervision->log_dir.empty() ? RunFolderBase(env) : supervision->log_dir;
    std::string base = supervision->log_dir.empty() ? supervision->stream_log_root + "/logs"
                                                    : supervision->log_dir;
    std::string id = parsed["run-id"].as<std::string>();  // one folder name, whatever it holds
    for (char& c : id) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    }
    supervision->stream_log_dir = base + "/" + id + "_" + std::to_string(::getpid());
    supervision->log_dir.clear();
    spdlog::info("worker stream logs (--tee/--redirects) in {}", supervision->stream_log_dir);
  }
  return Status::Ok();
}

/// --hang-timeout, --startup-timeout: a value that rounds to 0 ms is an error, not "off".
Result<milliseconds> PositiveTimeout(std::string_view text) {
  HETRUN_ASSIGN_OR_RETURN(milliseconds value, ParseDuration(text));
  if (value.count() > 0) return value;
  return InvalidArgumentError(
      "is 0 ms (rounded): give at least 1ms, or leave it unset to turn hang detection off");
}

Result<SupervisorOptions> ReadSupervision(const cxxopts::ParseResult& parsed,
                                          const Environment& env,
                                          const std::vector<std::string>& command) {
  SupervisorOptions supervision;
  supervision.command = command;
  supervision.prefix_ranks = parsed.count("prefix-ranks") > 0;
  if (parsed.count("log-dir")) supervision.log_dir = parsed["log-dir"].as<std::string>();
  HETRUN_RETURN_IF_ERROR(ReadStreamOptions(parsed, env, &supervision));
  HETRUN_ASSIGN_OR_RETURN(supervision.grace_period,
                          Setting<milliseconds>(parsed, "grace-period", env, "HETRUN_GRACE_PERIOD",
                                                std::chrono::seconds(30), ParseDurationSetting));
  // Unset: off (0). Given, a value that rounds to 0 ms is an error, not "off".
  HETRUN_ASSIGN_OR_RETURN(supervision.hang_timeout,
                          Setting<milliseconds>(parsed, "hang-timeout", env, "HETRUN_HANG_TIMEOUT",
                                                milliseconds(0), PositiveTimeout));
  HETRUN_ASSIGN_OR_RETURN(
      supervision.startup_timeout,
      Setting<milliseconds>(parsed, "startup-timeout", env, "HETRUN_STARTUP_TIMEOUT",
                            milliseconds(0), PositiveTimeout));
  HETRUN_ASSIGN_OR_RETURN(
      supervision.max_restarts,
      Setting<int>(parsed, "max-restarts", env, "HETRUN_MAX_RESTARTS", 0, IntInRange(0, 1000)));
  HETRUN_ASSIGN_OR_RETURN(supervision.restart_on,
                          Setting<RestartOn>(parsed, "restart-on", env, "HETRUN_RESTART_ON",
                                             RestartOn::kTransient, ParseRestartOn));
  HETRUN_ASSIGN_OR_RETURN(supervision.fail_slow_exit,
                          Setting<bool>(parsed, "fail-slow", env, "HETRUN_FAIL_SLOW", false,
                                        [](std::string_view text) -> Result<bool> {
                                          if (text == "warn" || text == "exit")
                                            return text == "exit";
                                          return InvalidArgumentError("must be warn or exit");
                                        }));
  return supervision;
}

/// HETRUN_POD_GRACE_PERIOD (the pod's terminationGracePeriodSeconds, from the emitted manifest):
/// warns when hetrun's worst case after SIGTERM does not fit in it (the kubelet's SIGKILL would
/// then cut the workers' grace period or node 0's final wait short).
Status CheckPodGracePeriod(const Environment& env, const RunPlan& plan) {
  HETRUN_ASSIGN_OR_RETURN(std::optional<milliseconds> pod,
                          env.GetDuration("HETRUN_POD_GRACE_PERIOD"));
  if (!pod) return Status::Ok();
  milliseconds final_wait =
      plan.topology.nnodes.value > 1 ? plan.preflight.peer_timeout : milliseconds(0);
  milliseconds need = plan.supervision.grace_period + final_wait + kPodGraceMargin;
  if (need > *pod) {
    spdlog::warn(
        "the pod's terminationGracePeriodSeconds ({}, HETRUN_POD_GRACE_PERIOD) is shorter than "
        "hetrun's worst case after SIGTERM: grace period {} + node 0's final wait {} + margin {} "
        "= {}; raise it or lower --grace-period",
        FormatDuration(*pod), FormatDuration(plan.supervision.grace_period),
        FormatDuration(final_wait), FormatDuration(kPodGraceMargin), FormatDuration(need));
  }
  return Status::Ok();
}

/// --check-collectives, --check-collectives-timeout (above 0) and --check-collectives-out (a file
/// whose folder exists), checked before the preflight.
Status ReadCollectiveCheck(const cxxopts::ParseResult& parsed, const Environment& env,
                           RunPlan& plan) {
  CollectiveCheckOptions& check = plan.collective_check;
  check.enabled = parsed.count("check-collectives") > 0;
  plan.preflight.check_collectives = check.enabled;
  HETRUN_ASSIGN_OR_RETURN(check.timeout,
                          Setting<milliseconds>(parsed, "check-collectives-timeout", env,
                                                "HETRUN_COLLECTIVE_CHECK_TIMEOUT", milliseconds(0),
                                                ParsePositiveDuration));
  if (parsed.count("check-collectives-out")) {
    const std::string out = parsed["check-collectives-out"].as<std::string>();
    Result<std::string> path = ParseMeasurementsOut(out);
    if (!path.ok()) {
      return UsageError("--check-collectives-out '" + out + "': " + path.status().message());
    }
    check.out = std::filesystem::absolute(*path).lexically_normal().string();
  }
  if (!check.enabled &&
      (parsed.count("check-collectives-timeout") || parsed.count("check-collectives-out"))) {
    return UsageError(
        "--check-collectives-timeout and --check-collectives-out go with --check-collectives");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ParseMeasurementsOut(std::string_view text) {
  const std::string path(text);
  if (path.empty() || path.back() == '/') return InvalidArgumentError("must name a file");
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return InvalidArgumentError("its folder " + dir + " is not a directory");
  }
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return InvalidArgumentError("is a directory");
  }
  return path;
}

Result<RunPlan> ReadRunPlan(const cxxopts::ParseResult& parsed, const Environment& env,
                            const std::vector<std::string>& command) {
  RunPlan plan;
  HETRUN_ASSIGN_OR_RETURN(plan.supervision, ReadSupervision(parsed, env, command));
  HETRUN_ASSIGN_OR_RETURN(
      CpuBind cpu_bind,
      Setting<CpuBind>(parsed, "cpu-bind", env, "HETRUN_CPU_BIND", CpuBind::kNone,
                       [](std::string_view text) { return ParseCpuBind(std::string(text)); }));
  TopologyOptionValues topology_options = ReadTopologyOptions(parsed);
  HETRUN_ASSIGN_OR_RETURN(TopologyInputs inputs, GatherTopologyInputs(env, topology_options.flags,
                                                                      topology_options.fake_gpus));
  HETRUN_ASSIGN_OR_RETURN(plan.topology, ResolveTopology(inputs));
  const Topology& topology = plan.topology;
  if (topology.ranks.empty() || topology.ranks.size() != topology.local_ranks.size()) {
    return InternalError("resolved topology has no local workers");
  }
  // Under mpirun or srun this process is one worker: run exactly that one, with its given rank.
  plan.local_workers = topology.per_process ? 1 : topology.ranks.size();
  SetLogIdentity(topology.node_rank.value, topology.per_process ? topology.ranks[0] : -1);
  HETRUN_ASSIGN_OR_RETURN(plan.inventory, DeclaredInventory(env, topology_options.fake_gpus));
  if (plan.inventory) {
    HETRUN_RETURN_IF_ERROR(CheckWorkersFitDeclaredGpus(
        plan.local_workers, topology, *plan.inventory,
        {topology_options.flags.nproc_per_node.has_value(), !topology_options.fake_gpus.empty()}));
  }
  if (!plan.inventory && (!env.Get("HETRUN_GPU_FAMILY") || !env.Get("HETRUN_GPU_MODEL"))) {
    NvmlFamilies nvml = GpuFamiliesFromNvml();
    plan.nvml_families = std::move(nvml.families);
    plan.nvml_models = std::move(nvml.models);
  }
  HETRUN_ASSIGN_OR_RETURN(plan.preflight, ReadPreflightOptions(parsed, env));
  plan.preflight.python = parsed.count("python") ? parsed["python"].as<std::string>()
                                                 : PythonOrDefault(env.Get("HETRUN_PYTHON"));
  plan.run_id = parsed["run-id"].as<std::string>();
  plan.role = parsed["role"].as<std::string>();
  plan.signals_to_handle = parsed["signals-to-handle"].as<std::string>();
  HETRUN_ASSIGN_OR_RETURN(
      plan.measurements_out,
      Setting<std::string>(parsed, "measurements-out", env, "HETRUN_MEASUREMENTS_OUT", "",
                           ParseMeasurementsOut));
  plan.preflight.job_id = plan.run_id;
  // Local settings are checked before the preflight, which may join the other nodes.
  HETRUN_ASSIGN_OR_RETURN(plan.worker_cpus, WorkerCpus(cpu_bind, topology, plan.local_workers));
  std::optional<int> task_index;
  if (topology.task_index) task_index = topology.task_index->value;
  HETRUN_ASSIGN_OR_RETURN(PodStage pod_stage, PodStageVariables(env, task_index));
  plan.stage_vars = pod_stage.vars;
  if (!plan.stage_vars.empty()) {
    spdlog::info("pipeline stage {} (entry {} of HETRUN_STAGE={}){}",
                 plan.stage_vars["HETRUN_STAGE"], pod_stage.task_index,
                 env.Get("HETRUN_STAGE").value_or(""),
                 plan.stage_vars.contains("HETRUN_STAGE_LAYERS")
                     ? ", layers " + plan.stage_vars["HETRUN_STAGE_LAYERS"]
                     : std::string());
  }
  HETRUN_RETURN_IF_ERROR(CheckPodGracePeriod(env, plan));
  HETRUN_RETURN_IF_ERROR(ReadPipelinePlan(parsed, plan));
  HETRUN_RETURN_IF_ERROR(ReadLayoutState(parsed, env, plan));
  HETRUN_ASSIGN_OR_RETURN(plan.model_layers,
                          Setting<int>(parsed, "model-layers", env, "HETRUN_MODEL_LAYERS", 0,
                                       IntInRange(1, static_cast<int>(plan::kMaxModelLayers))));
  // One node knows its layout now; across nodes it is checked once the records are in.
  if (MembershipOf(plan.topology).members == 1) HETRUN_RETURN_IF_ERROR(CheckModelLayers(plan));
  HETRUN_RETURN_IF_ERROR(ReadReplan(parsed, env, plan));
  HETRUN_RETURN_IF_ERROR(ReadCollectiveCheck(parsed, env, plan));
  return plan;
}

}  // namespace hetrun::launcher

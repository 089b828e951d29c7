// `hetrun [run] [OPTIONS] -- COMMAND ARGS...`: resolve the job, run the preflight, then start
// and supervise the local workers (launcher/supervise/supervisor.h) and exit with the contract's
// code. Nothing heavy runs between exec and the first worker when no rendezvous is needed: no
// Python and no GPU probe unless --nproc-per-node auto asks for the GPU count; the one-node store
// binds its port at once and loads libtorch on its own thread beside the workers
// (rendezvous/one_node_store.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <set>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "commands/phase_signals.h"
#include "commands/setting.h"
#include "commands/torchrun_args.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/base/logging.h"
#include "hetrun/base/random_id.h"
#include "hetrun/base/units.h"
#include "hetrun/job/inventory.h"
#include "hetrun/job/topology.h"
#include "hetrun/pipeline/layout_state.h"
#include "hetrun/pipeline/node_layout.h"
#include "hetrun/pipeline/plan_layout.h"
#include "metrics/metrics_server.h"
#include "metrics/pod_metrics.h"
#include "preflight/collective_check.h"
#include "preflight/default_python.h"
#include "preflight/layout_state_resume.h"
#include "preflight/nvml_families.h"
#include "preflight/preflight.h"
#include "preflight/stage_env.h"
#include "preflight/topology_inputs.h"
#include "preflight/torch_location.h"
#include "rendezvous/attempt_store.h"
#include "rendezvous/one_node_store.h"
#include "rendezvous/store_port.h"
#include "supervise/cpu_binding.h"
#include "supervise/engine_args_env.h"
#include "supervise/measurement_gathering.h"
#include "supervise/run_folder.h"
#include "supervise/supervisor.h"
#include "supervise/termination_log.h"
#include "supervise/worker_env.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;

/// Extra time on top of the grace period and node 0's final wait that the pod's
/// terminationGracePeriodSeconds should leave (process exit, log flushing).
constexpr milliseconds kPodGraceMargin{std::chrono::seconds(10)};

void AddTorchrunOptions(cxxopts::Options& options);

// Re-plan by supervised restart (docs/how-to/replan-restart.md).
void AddReplanOptions(cxxopts::Options& options) {
  options.add_options("supervision")(
      "replan-restart",
      "act on a worker's exit 82 (re-plan requested): wait up to the grace period for every "
      "local worker to exit 82 with a complete checkpoint, then restart them on the recorded "
      "layout, not counted against --max-restarts (default off: 82 is reported as 1)")(
      "max-replans", "re-plans by restart at most (HETRUN_MAX_REPLANS, default 3)",
      cxxopts::value<std::string>())(
      "checkpoint-dir",
      "the workers' re-plan checkpoint folder, given to them in HETRUN_CHECKPOINT_DIR; "
      "--replan-restart needs it; across nodes on the --layout-state volume "
      "(HETRUN_CHECKPOINT_DIR, default none)",
      cxxopts::value<std::string>())(
      "model-layers",
      "the model's layer count: a pipeline layout (--plan, the pods' HETRUN_STAGE entries, the "
      "layout state) of another count exits 78 before any worker starts (HETRUN_MODEL_LAYERS, "
      "default not checked)",
      cxxopts::value<std::string>())(
      "torchtitan-names",
      "EMBEDDING:LAYER:HEAD torchtitan module names ({} = the layer index) of the "
      "HETRUN_TORCHTITAN_ARGS each attempt of a pipeline gets (HETRUN_TORCHTITAN_NAMES, default "
      "tok_embeddings:layers.{}:norm,lm_head)",
      cxxopts::value<std::string>());
}

// Health of the running job (docs/ARCHITECTURE.md §5.10).
void AddHealthOptions(cxxopts::Options& options) {
  options.add_options("health")(
      "fail-slow",
      "warn or exit: a rank the tuner finds slower than its GPU family (or its own history) for "
      "3 windows is logged (warn, balancing goes on) or ends the job with 83, no local restart "
      "(exit) (HETRUN_FAIL_SLOW, default warn)",
      cxxopts::value<std::string>());
}

// The collective check before the workers (docs/how-to/collective-check.md).
void AddCollectiveCheckOptions(cxxopts::Options& options) {
  options.add_options("preflight")(
      "check-collectives",
      "before the workers start, once per hetrun run: one probe per local rank (python -m "
      "hetrun.collective_check) checks all-reduce and all-gather from 8 B to 8 MiB bit for bit "
      "over the job (NCCL on GPUs, Gloo on CPU) and measures the links; a wrong value exits 84, a "
      "timeout 75 (default off)")(
      "check-collectives-timeout",
      "the check's deadline (HETRUN_COLLECTIVE_CHECK_TIMEOUT, default 60s + 100ms x world size)",
      cxxopts::value<std::string>())(
      "check-collectives-out",
      "write the measured links as a cluster-file fragment to FILE, for hetrun plan --links "
      "(node 0; default: only in the run folder)",
      cxxopts::value<std::string>());
}

cxxopts::Options RunOptions() {
  cxxopts::Options options("hetrun run",
                           "Start the local workers of a training job and supervise them.");
  options.custom_help(
      "[OPTIONS] -- COMMAND [ARGS...] | [OPTIONS] train.py [ARGS...] | [OPTIONS] -m MODULE "
      "[ARGS...]   (run is the default subcommand; torchrun's options and underscore spellings "
      "are accepted)");
  AddTopologyOptions(options);
  options.add_options("supervision")(
      "prefix-ranks", "prefix every worker output line with [rank R] on the console")(
      "t,tee",
      "torchrun's --tee: also write these streams to log files: 0 none, 1 stdout, 2 stderr, 3 "
      "both, or per local rank 0:1,1:2 (files <log-dir>/<run-id>_<pid>/attempt_N/LOCAL_RANK/)",
      cxxopts::value<std::string>())(
      "r,redirects", "torchrun's --redirects: these streams go to the log files only (as --tee)",
      cxxopts::value<std::string>())("local-ranks-filter",
                                     "only these local ranks' output reaches the console (0,1)",
                                     cxxopts::value<std::string>())(
      "log-dir",
      "write one log file per rank (rank_R.log; rank_R.restart_N.log after restarts); with --tee "
      "or --redirects, the base of torchrun's layout",
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
      cxxopts::value<std::string>())(
      "plan",
      "run a pipeline on this machine: FILE is `hetrun plan --json` output; the workers take its "
      "stages in order (rank = replicas of earlier stages + index) and get the layout file in "
      "HETRUN_PLAN",
      cxxopts::value<std::string>())(
      "run-id", "TORCHELASTIC_RUN_ID for the workers (default none; --standalone: a fresh UUID)",
      cxxopts::value<std::string>()->default_value("none"))(
      "role", "ROLE_NAME for the workers (default default)",
      cxxopts::value<std::string>()->default_value("default"))(
      "signals-to-handle", "TORCHELASTIC_SIGNALS_TO_HANDLE for the workers",
      cxxopts::value<std::string>()->default_value("SIGTERM,SIGINT,SIGHUP,SIGQUIT"))(
      "dry-run", "print each local worker's command and environment, start nothing")(
      "measurements-out",
      "copy the pipeline's merged measurements.json (docs/reference/formats/measurements.md) to "
      "FILE at the end of the run: node 0 writes every node's, another node its own "
      "(HETRUN_MEASUREMENTS_OUT, default none)",
      cxxopts::value<std::string>())(
      "layout-state",
      "the pipeline's layout state on storage that outlives pods (the checkpoint volume): a job "
      "restarted whole resumes from the split its live layer moves reached; global rank 0 "
      "rewrites it after each move (HETRUN_LAYOUT_STATE, default none)",
      cxxopts::value<std::string>())(
      "metrics-port",
      "serve Prometheus metrics on http://HOST:PORT/metrics while the workers run ([HOST:]PORT, "
      "default host 0.0.0.0, port 0 = any free one) (HETRUN_METRICS_PORT, default off)",
      cxxopts::value<std::string>())("h,help", "this text");
  AddTorchrunOptions(options);
  AddPreflightOptions(options);
  AddCollectiveCheckOptions(options);
  AddHealthOptions(options);
  AddReplanOptions(options);
  return options;
}

// torchrun's own options that hetrun run takes as torchrun does.
void AddTorchrunOptions(cxxopts::Options& options) {
  options.add_options("torchrun")(
      "python",
      "interpreter for a .py program and -m (HETRUN_PYTHON; default: the python beside a "
      "pip-installed hetrun, else python3)",
      cxxopts::value<std::string>())("m,module", "run the program as python -m MODULE")(
      "no-python", "execute the program directly, even a .py file")(
      "run-path", "run the program with the Python interpreter whatever its name")(
      "standalone",
      "one node on this host: --nnodes 1, --master-addr localhost, a free port, a fresh run id")(
      "rdzv-endpoint", "HOST[:PORT]: the same as --master-addr and --master-port",
      cxxopts::value<std::string>())("rdzv-backend",
                                     "c10d or static, accepted (hetrun always meets at its store)",
                                     cxxopts::value<std::string>())(
      "rdzv-id", "the same as --run-id", cxxopts::value<std::string>());
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

/// Real GPUs, no family from the job: NVML's families for HETRUN_GPU_FAMILY (no CUDA context;
/// its cost is logged). A failure only means the workers get no family: logged, not fatal.
std::vector<std::string> GpuFamiliesFromNvml() {
  Result<std::optional<NvmlFamilies>> nvml = ReadNvmlFamilies();
  if (!nvml.ok()) {
    spdlog::warn("HETRUN_GPU_FAMILY not set for the workers: {}", nvml.status().ToString());
    return {};
  }
  if (!nvml->has_value()) return {};
  std::string list;
  for (const std::string& f : (*nvml)->families) list += (list.empty() ? "" : ",") + f;
  spdlog::info("GPU families from NVML in {:.1f} ms: [{}]", (*nvml)->elapsed_ms, list);
  return (*nvml)->families;
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

/// Everything `hetrun run` reads before the preflight.
struct RunPlan {
  SupervisorOptions supervision;
  Topology topology;
  size_t local_workers = 1;
  std::optional<Inventory> inventory;
  std::vector<std::string> nvml_families;  ///< without an inventory: for HETRUN_GPU_FAMILY
  PreflightOptions preflight;
  std::vector<std::vector<int>> worker_cpus;
  std::map<std::string, std::string> stage_vars;
  std::string run_id;
  std::optional<pipeline::JobLayout> layout;  ///< --plan: the pipeline's layout
  plan::TorchtitanNames torchtitan_names;     ///< --torchtitan-names: of HETRUN_TORCHTITAN_ARGS
  int64_t model_layers = 0;                   ///< --model-layers: the layout's count, 0 = any
  std::string role;
  std::string signals_to_handle;
  std::string measurements_out;  ///< --measurements-out: where the merged measurements go
  bool agent_store = false;      ///< one node: the workers use the store hetrun hosts
  CollectiveCheckOptions collective_check;  ///< --check-collectives
};

/// --measurements-out FILE: a file path whose folder exists (checked before the run, not at its
/// end).
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
  HETRUN_ASSIGN_OR_RETURN(
      supervision.hang_timeout,
      Setting<milliseconds>(parsed, "hang-timeout", env, "HETRUN_HANG_TIMEOUT", milliseconds(0),
                            [](std::string_view text) -> Result<milliseconds> {
                              HETRUN_ASSIGN_OR_RETURN(milliseconds value, ParseDuration(text));
                              if (value.count() > 0) return value;
                              return InvalidArgumentError(
                                  "is 0 ms (rounded): give at least 1ms, or leave it unset to "
                                  "turn hang detection off");
                            }));
  HETRUN_ASSIGN_OR_RETURN(
      supervision.max_restarts,
      Setting<int>(parsed, "max-restarts", env, "HETRUN_MAX_RESTARTS", 0, IntInRange(0, 1000)));
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

/// --plan FILE: the layout of a one-machine pipeline (hetrun/pipeline/plan_layout.h).
Status ReadPipelinePlan(const cxxopts::ParseResult& parsed, RunPlan& plan) {
  if (!parsed.count("plan")) return Status::Ok();
  const std::string path = parsed["plan"].as<std::string>();
  if (plan.topology.nnodes.value != 1) {
    return InvalidArgumentError("--plan " + path +
                                " runs a pipeline on one machine, but the job has " +
                                std::to_string(plan.topology.nnodes.value) +
                                " nodes (across nodes each pod's HETRUN_STAGE entries make the "
                                "layout)");
  }
  HETRUN_ASSIGN_OR_RETURN(plan.layout,
                          pipeline::LoadLayoutFromPlan(path, plan.topology.world_size));
  std::string stages;
  for (const pipeline::StageLayout& stage : plan.layout->stages) {
    stages += (stages.empty() ? "" : ", ") + std::to_string(stage.replicas()) + "x layers " +
              std::to_string(stage.first_layer) + ":" + std::to_string(stage.layers);
  }
  spdlog::info("pipeline of {} stages from --plan {} ({}), {} micro-batches",
               plan.layout->stages.size(), path, stages, plan.layout->micro_batches);
  return Status::Ok();
}

/// Writes the layout file into the run folder (atomically: after a live move the trainers
/// rewrite it the same way); its path goes to the workers in HETRUN_PLAN.
Result<std::string> WriteLayoutFile(const pipeline::JobLayout& layout, const std::string& dir) {
  const std::string path = dir + "/layout.json";
  HETRUN_RETURN_IF_ERROR(pipeline::WriteJobLayoutFile(layout, path));
  return path;
}

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

/// --layout-state FILE: the workers get its path (global rank 0 rewrites it after each move); the
/// job's member 0 reads it (across nodes its text travels in member 0's rendezvous record, so
/// every node resumes alike); with --plan the plan's layout follows it now.
Status ReadLayoutState(const cxxopts::ParseResult& parsed, const Environment& env, RunPlan& plan) {
  HETRUN_ASSIGN_OR_RETURN(
      std::string path, Setting<std::string>(parsed, "layout-state", env, "HETRUN_LAYOUT_STATE", "",
                                             ParseMeasurementsOut));
  if (path.empty()) return Status::Ok();
  path = std::filesystem::absolute(path).lexically_normal().string();
  plan.stage_vars["HETRUN_LAYOUT_STATE"] = path;
  if (MembershipOf(plan.topology).member != 0) return Status::Ok();
  plan.preflight.layout_state_path = path;
  plan.preflight.layout_state = ReadLayoutStateForStart(path);
  if (MembershipOf(plan.topology).members == 1) {
    ResumeFromLayoutState(plan.layout, plan.preflight.layout_state, path);
  }
  return Status::Ok();
}

/// Across nodes: the layout assembled from every launcher's stage entry (exchanged at the
/// rendezvous); nullopt when no node has one. Every node assembles the same layout from the same
/// records, or fails with the same error (exit 78, naming both nodes).
Result<std::optional<pipeline::JobLayout>> LayoutFromRecords(const std::vector<NodeRecord>& records,
                                                             int world_size) {
  bool any = false;
  std::vector<pipeline::NodeStage> entries;
  for (const NodeRecord& r : records) {
    any = any || r.stage >= 0;
    entries.push_back({NodeLabel(r), r.stage, r.stage_first_layer, r.stage_layers, r.ranks,
                       r.gpus.empty() ? std::string() : r.gpus.front().family, r.micro_batches});
  }
  if (!any || records.size() < 2) return std::optional<pipeline::JobLayout>();
  HETRUN_ASSIGN_OR_RETURN(pipeline::JobLayout layout,
                          pipeline::AssembleLayout(entries, world_size));
  spdlog::info(
      "pipeline of {} stages assembled from the {} nodes' HETRUN_STAGE entries, {} micro-batches "
      "({})",
      layout.stages.size(), records.size(), layout.micro_batches,
      records.front().micro_batches > 0 ? "HETRUN_MICRO_BATCHES" : "one per stage");
  return std::optional<pipeline::JobLayout>(std::move(layout));
}

/// Across launchers, after the rendezvous: the layout assembled from the records (without
/// --plan), then member 0's layout state applied to it alike on every node; the run folder's
/// layout file is (re)written when either changed it.
/// --model-layers: the layout the job starts from (after the layout state) must have that many
/// layers; without a layout there is nothing to check, which is an error too.
Status CheckModelLayers(const RunPlan& plan) {
  if (plan.model_layers == 0) return Status::Ok();
  if (!plan.layout) {
    return InvalidArgumentError(
        "--model-layers " + std::to_string(plan.model_layers) +
        " (HETRUN_MODEL_LAYERS) checks a pipeline layout, and this run has none (no --plan, no "
        "HETRUN_STAGE)");
  }
  if (plan.layout->num_layers == plan.model_layers) return Status::Ok();
  return InvalidArgumentError(
      "the pipeline layout has " + std::to_string(plan.layout->num_layers) + " layers (split " +
      pipeline::SplitText(*plan.layout) + ", revision " + std::to_string(plan.layout->revision) +
      "), the model " + std::to_string(plan.model_layers) +
      " (--model-layers, HETRUN_MODEL_LAYERS): a plan or layout state of another model?");
}

Status SettleJobLayout(RunPlan& plan, const std::vector<NodeRecord>& records,
                       const std::string& run_dir) {
  bool changed = false;
  if (!plan.layout) {
    HETRUN_ASSIGN_OR_RETURN(plan.layout, LayoutFromRecords(records, plan.topology.world_size));
    changed = plan.layout.has_value();
  }
  if (!records.empty()) {
    changed = ResumeFromLayoutState(plan.layout, records.front().layout_state,
                                    records.front().layout_state_path) ||
              changed;
  }
  HETRUN_RETURN_IF_ERROR(CheckModelLayers(plan));
  if (changed) {
    HETRUN_ASSIGN_OR_RETURN(plan.stage_vars["HETRUN_PLAN"], WriteLayoutFile(*plan.layout, run_dir));
  }
  return Status::Ok();
}

/// --checkpoint-dir DIR: an existing folder this user may write, or one its writable parent can
/// hold (the trainer makes it); across nodes on the volume of --layout-state, the storage every
/// node shares (same st_dev as the layout state's folder). Never creates anything.
Status CheckCheckpointDir(const std::string& dir, const RunPlan& plan) {
  const std::string what = "--checkpoint-dir " + dir;
  struct stat info {};
  std::string folder = dir;
  if (::stat(dir.c_str(), &info) != 0) {
    if (errno != ENOENT) return ErrnoError("stat", dir, errno).WithContext(what);
    folder = std::filesystem::path(dir).parent_path().string();
    if (::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return InvalidArgumentError(what + ": it does not exist and its folder " + folder +
                                  " is not a directory");
    }
  } else if (!S_ISDIR(info.st_mode)) {
    return InvalidArgumentError(what + ": is not a directory");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return InvalidArgumentError(what + ": " + folder + " is not writable by this user (" +
                                std::strerror(errno) + ")");
  }
  const int nnodes = plan.topology.nnodes.value;
  if (nnodes == 1) return Status::Ok();
  auto state = plan.stage_vars.find("HETRUN_LAYOUT_STATE");
  const std::string rule = ": with " + std::to_string(nnodes) +
                           " nodes it must be on shared storage, the volume of --layout-state";
  if (state == plan.stage_vars.end()) {
    return InvalidArgumentError(what + rule + " (HETRUN_LAYOUT_STATE), which is not given");
  }
  const std::string state_folder = std::filesystem::path(state->second).parent_path().string();
  struct stat shared {};
  if (::stat(state_folder.c_str(), &shared) != 0) {
    return ErrnoError("stat", state_folder, errno).WithContext("--layout-state's folder");
  }
  if (shared.st_dev != info.st_dev) {
    return InvalidArgumentError(what + rule + " " + state->second +
                                ", but it is on another filesystem");
  }
  return Status::Ok();
}

/// --replan-restart, --max-replans and --checkpoint-dir (docs/how-to/replan-restart.md), checked
/// before any worker starts; the folder reaches the workers in HETRUN_CHECKPOINT_DIR.
Status ReadReplan(const cxxopts::ParseResult& parsed, const Environment& env, RunPlan& plan) {
  SupervisorOptions& supervision = plan.supervision;
  supervision.replan_restart = parsed.count("replan-restart") > 0;
  HETRUN_ASSIGN_OR_RETURN(
      plan.torchtitan_names,
      Setting<plan::TorchtitanNames>(
          parsed, "torchtitan-names", env, "HETRUN_TORCHTITAN_NAMES", plan::TorchtitanNames{},
          [](std::string_view text) { return plan::ParseTorchtitanNames(text, "the names"); }));
  HETRUN_ASSIGN_OR_RETURN(
      supervision.max_replans,
      Setting<int>(parsed, "max-replans", env, "HETRUN_MAX_REPLANS", 3, IntInRange(0, 1000)));
  HETRUN_ASSIGN_OR_RETURN(
      std::string dir, Setting<std::string>(parsed, "checkpoint-dir", env, "HETRUN_CHECKPOINT_DIR",
                                            "", [](std::string_view text) -> Result<std::string> {
                                              if (text.empty())
                                                return InvalidArgumentError("is empty");
                                              return std::string(text);
                                            }));
  if (dir.empty()) {
    if (!supervision.replan_restart) return Status::Ok();
    return UsageError(
        "hetrun run --replan-restart needs --checkpoint-dir DIR (HETRUN_CHECKPOINT_DIR): the "
        "folder of the checkpoint every worker saves before it exits 82");
  }
  dir = std::filesystem::absolute(dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  HETRUN_RETURN_IF_ERROR(CheckCheckpointDir(dir, plan));
  supervision.checkpoint_dir = dir;
  plan.stage_vars["HETRUN_CHECKPOINT_DIR"] = dir;
  return Status::Ok();
}

/// --check-collectives, --check-collectives-timeout (above 0) and --check-collectives-out (a file
/// whose folder exists), checked before the preflight.
Status ReadCollectiveCheck(const cxxopts::ParseResult& parsed, const Environment& env,
                           RunPlan& plan) {
  CollectiveCheckOptions& check = plan.collective_check;
  check.enabled = parsed.count("check-collectives") > 0;
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
  if (!plan.inventory && !env.Get("HETRUN_GPU_FAMILY")) plan.nvml_families = GpuFamiliesFromNvml();
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

/// The workers of one attempt: WorkerEnvironment plus what the preflight and the stage add.
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

/// Where the hosted stores find the workers' torch (the plugin's libtorch): `python`'s.
TorchDirLookup TorchDirOf(const std::string& python) {
  return [python]() -> Result<std::filesystem::path> {
    HETRUN_ASSIGN_OR_RETURN(std::string dir, FindTorchPackageDir(python));
    return std::filesystem::path(dir);
  };
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

WorkerSpecsFn WorkerSpecs(const RunPlan& plan, const PreflightResult& preflight,
                          const Environment& env) {
  WorkerEnvOptions env_options;
  env_options.max_restarts = plan.supervision.max_restarts;
  env_options.run_id = plan.run_id;
  env_options.role = plan.role;
  env_options.signals_to_handle = plan.signals_to_handle;
  env_options.inventory = plan.inventory ? &*plan.inventory : nullptr;
  env_options.nvml_families = plan.nvml_families;
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

/// After supervision: tells the other nodes how this node ended (node 0 keeps the store up for
/// them, watching for signals meanwhile). Returns the exit code when it overrides the outcome:
/// a lost peer (75) or a shutdown signal during the final wait (128 + N).
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

/// The preflight with the shutdown signals watched: nullopt result + exit code when a signal
/// stopped it (the other nodes are told).
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
  return -1;
}

/// The options as cxxopts parsed them (after the torchrun translation) and the workers' argv.
struct RunCommandLine {
  cxxopts::ParseResult parsed;
  std::vector<std::string> command;
  bool help = false;
  bool free_port = false;    ///< the port was chosen here (port 0 or --standalone): one node only
  StorePort free_port_held;  ///< that port, held since it was chosen
};

std::vector<KnownOption> KnownRunOptions(const cxxopts::Options& options) {
  std::vector<KnownOption> known;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& option : options.group_help(group).options) {
      for (const std::string& name : option.l) known.push_back({name, !option.is_boolean});
    }
  }
  return known;
}

/// --master-port 0 (also from --rdzv-endpoint HOST:0, torchrun's "stacked single-node" form) and
/// --standalone without a port: a free port, bound on 127.0.0.1 now and held (`held`) for the
/// store hetrun hosts on it (rendezvous/store_port.h), never free for another process between.
/// True when one was chosen.
Result<bool> ChooseFreePort(TorchrunArgs& torchrun, StorePort* held) {
  std::vector<std::string>& options = torchrun.options;
  auto last = std::find(options.rbegin(), options.rend(), "--master-port");
  const bool zero = last != options.rend() && last != options.rbegin() && *(last - 1) == "0";
  if (!zero && !(torchrun.standalone && last == options.rend())) return false;
  Result<StorePort> port = StorePort::Hold("127.0.0.1", 0, StorePort());
  if (!port.ok()) return Status(port.status().code(), "a free port: " + port.status().message());
  *held = std::move(*port);
  if (zero) {
    *(last - 1) = std::to_string(held->port());
  } else {
    options.insert(options.end(), {"--master-port", std::to_string(held->port())});
  }
  return true;
}

/// --standalone without --run-id/--rdzv-id: a fresh UUID as torchrun's, so two standalone jobs
/// never share TORCHELASTIC_RUN_ID (the default "none" otherwise).
Status ChooseStandaloneRunId(TorchrunArgs& torchrun) {
  std::vector<std::string>& options = torchrun.options;
  if (!torchrun.standalone ||
      std::find(options.begin(), options.end(), "--run-id") != options.end()) {
    return Status::Ok();
  }
  HETRUN_ASSIGN_OR_RETURN(std::string id, RandomUuid());
  spdlog::info("--standalone: run id {}", id);
  options.insert(options.end(), {"--run-id", id});
  return Status::Ok();
}

Result<RunCommandLine> ParseRunCommandLine(cxxopts::Options& options,
                                           const CommandContext& context) {
  HETRUN_ASSIGN_OR_RETURN(TorchrunArgs torchrun,
                          TranslateTorchrunArgs(context.args, KnownRunOptions(options)));
  RunCommandLine line;
  HETRUN_ASSIGN_OR_RETURN(line.free_port, ChooseFreePort(torchrun, &line.free_port_held));
  HETRUN_RETURN_IF_ERROR(ChooseStandaloneRunId(torchrun));
  HETRUN_ASSIGN_OR_RETURN(line.parsed, ParseSubcommandOptions(options, torchrun.options));
  line.help = line.parsed.count("help") > 0;
  if (line.help) return line;
  if (torchrun.program.empty()) {
    return UsageError(
        "hetrun run: no command (usage: hetrun run [OPTIONS] -- COMMAND [ARGS...], or "
        "hetrun run [OPTIONS] train.py [ARGS...] as torchrun)");
  }
  for (const std::string& ignored : torchrun.ignored) {
    spdlog::info("{}: a torchrun option hetrun accepts and does not need (ignored)", ignored);
  }
  HETRUN_ASSIGN_OR_RETURN(
      std::string python,
      Setting<std::string>(line.parsed, "python", context.env, "HETRUN_PYTHON", DefaultPython(),
                           [](std::string_view text) -> Result<std::string> {
                             if (text.empty()) return InvalidArgumentError("is empty");
                             return std::string(text);
                           }));
  line.command = WorkerCommand(torchrun, python);
  return line;
}

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

/// `hetrun run --dry-run`: each local worker's command and the variables hetrun sets or changes
/// for it, and torchrun's variables always (sorted; the rest of its environment is hetrun's own),
/// nothing started. The preflight's
/// additions (memory ceiling, agent store) are not included: the preflight does not run.
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

/// --metrics-port / HETRUN_METRICS_PORT: the endpoint, bound before the preflight so a taken
/// port fails before any rendezvous; served by the supervisor's loop. Null when off.
Result<std::unique_ptr<MetricsServer>> StartMetrics(const cxxopts::ParseResult& parsed,
                                                    const Environment& env, const RunPlan& plan,
                                                    const PreflightResult& preflight,
                                                    const SupervisionStatus& status) {
  HETRUN_ASSIGN_OR_RETURN(std::optional<MetricsAddress> address,
                          Setting<std::optional<MetricsAddress>>(
                              parsed, "metrics-port", env, "HETRUN_METRICS_PORT", std::nullopt,
                              [](std::string_view text) -> Result<std::optional<MetricsAddress>> {
                                HETRUN_ASSIGN_OR_RETURN(MetricsAddress parsed_address,
                                                        ParseMetricsAddress(std::string(text)));
                                return std::optional<MetricsAddress>(parsed_address);
                              }));
  if (!address) return std::unique_ptr<MetricsServer>();
  auto render = [&plan, &preflight, &status] {
    PodMetricsInput input;
    input.status = &status;
    input.run_dir = plan.supervision.run_dir;
    input.nnodes = plan.topology.nnodes.value;
    input.node_rank = plan.topology.node_rank.value;
    input.rendezvous = preflight.rendezvous != nullptr;
    input.nodes_joined = input.rendezvous ? static_cast<int>(preflight.records.size()) : 1;
    if (plan.topology.per_process && input.rendezvous) input.nodes_joined = input.nnodes;
    if (preflight.ceiling) input.memory_ceiling = preflight.ceiling->bytes;
    return RenderPodMetrics(input);
  };
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> server,
                          MetricsServer::Listen(*address, std::move(render)));
  spdlog::info("metrics on http://{}:{}/metrics", address->host, server->port());
  return server;
}

/// One launcher (one node): the store's port bound at once, before the preflight and any worker
/// (rendezvous/store_port.h: a taken port exits 78 naming it and its holder). Null across nodes,
/// where the rendezvous hosts the store.
Result<std::unique_ptr<OneNodeStore>> HoldOneNodeStore(const RunPlan& plan, StorePort free_port) {
  if (MembershipOf(plan.topology).members != 1) return std::unique_ptr<OneNodeStore>();
  const std::string& host = plan.topology.master_addr.value;
  HETRUN_ASSIGN_OR_RETURN(
      StorePort port, StorePort::Hold(host, plan.topology.master_port.value, std::move(free_port)));
  spdlog::debug("store port {}:{} held", host, port.port());
  return std::make_unique<OneNodeStore>(host, std::move(port));
}

/// Right before the workers start: the store's libtorch part comes up beside them (or, without
/// the plugin, the port is released for rank 0); a store that fails to come up stops them.
void StartOneNodeStore(OneNodeStore& store, RunPlan& plan) {
  plan.agent_store =
      store.Start(TorchDirOf(plan.preflight.python), spdlog::should_log(spdlog::level::debug));
  if (plan.agent_store) plan.supervision.on_signals_ready = [&store] { store.Arm(); };
}

/// --check-collectives, right before the workers (preflight/collective_check.h): nullopt when they
/// may start, else the exit code (logged, in the termination log, told to the other nodes).
Result<std::optional<int>> CheckCollectives(const RunPlan& plan, const PreflightResult& preflight,
                                            const Environment& env, const OneNodeStore* store) {
  CollectiveCheckInput input;
  input.options = plan.collective_check;
  input.supervision = plan.supervision;
  HETRUN_ASSIGN_OR_RETURN(input.workers, WorkerSpecs(plan, preflight, env)(0, false));
  input.python = plan.preflight.python;
  input.world_size = plan.topology.world_size;
  input.writes_fragment = MembershipOf(plan.topology).member == 0;
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

}  // namespace

Result<int> commands::Run(const CommandContext& context) {
  cxxopts::Options options = RunOptions();
  HETRUN_ASSIGN_OR_RETURN(RunCommandLine line, ParseRunCommandLine(options, context));
  if (line.help) {
    context.out << options.help({"topology", "supervision", "torchrun", "preflight", "health"});
    return kExitOk;
  }
  const cxxopts::ParseResult& parsed = line.parsed;
  const std::vector<std::string>& command = line.command;
  HETRUN_ASSIGN_OR_RETURN(RunPlan plan, ReadRunPlan(parsed, context.env, command));
  if (line.free_port && plan.topology.nnodes.value > 1) {
    return UsageError("hetrun run: port 0 (a free port) needs one node; the job has " +
                      std::to_string(plan.topology.nnodes.value) + " nodes (" +
                      plan.topology.nnodes.source + "): give every node the same MASTER_PORT");
  }
  if (parsed.count("dry-run")) {
    HETRUN_RETURN_IF_ERROR(PrintDryRun(plan, context));
    return kExitOk;
  }
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<OneNodeStore> store,
                          HoldOneNodeStore(plan, std::move(line.free_port_held)));
  // One run folder per `hetrun run`, before anything that may need it (launcher/supervise/
  // run_folder.h); removed when this function returns.
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<RunFolder> run_folder,
                          RunFolder::Create(RunFolderBase(context.env)));
  plan.supervision.run_dir = run_folder->path();
  if (plan.layout) {
    HETRUN_ASSIGN_OR_RETURN(plan.stage_vars["HETRUN_PLAN"],
                            WriteLayoutFile(*plan.layout, run_folder->path()));
  }
  PreflightResult preflight;
  SupervisionStatus status;
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics,
                          StartMetrics(parsed, context.env, plan, preflight, status));
  plan.supervision.status = &status;
  plan.supervision.poll_participant = metrics.get();
  HETRUN_ASSIGN_OR_RETURN(int stopped, PreflightUnderSignals(plan, context, command, &preflight));
  if (stopped >= 0) return stopped;
  JobRendezvous* rendezvous = preflight.rendezvous.get();
  if (rendezvous) {
    if (Status settled = SettleJobLayout(plan, preflight.records, run_folder->path());
        !settled.ok()) {
      rendezvous->Finish(kExitConfig);
      return settled;
    }
  }
  if (rendezvous) {
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
  }
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
  std::optional<pipeline::Measurements> measured =
      LeaveMeasurements(rendezvous, run_folder->path());
  std::optional<int> code;
  if (rendezvous) {
    HETRUN_ASSIGN_OR_RETURN(code, FinishRendezvous(*rendezvous, supervised, context.env));
  }
  SaveRunMeasurements(rendezvous, plan, std::move(measured));
  if (code) return *code;
  return ReportOutcome(std::move(supervised), context.env);
}

}  // namespace hetrun::launcher

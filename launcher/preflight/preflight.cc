#include "preflight/preflight.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <random>
#include <set>
#include <thread>

#include "commands/setting.h"
#include "hetrun/arch/image_check.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"
#include "hetrun/base/version.h"
#include "hetrun/memory/alloc_conf.h"
#include "preflight/gpu_probe.h"
#include "preflight/open_rendezvous.h"
#include "preflight/stage_env.h"
#include "preflight/torch_location.h"

#ifndef HETRUN_TORCH_VERSION
#define HETRUN_TORCH_VERSION ""
#endif

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;

std::string Hostname() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown-host";
  return host;
}

// NCCL refuses to mix versions across ranks. HETRUN_NCCL_VERSION declares the image's version;
// otherwise ask the libnccl.so.2 the workers would load (the dynamic linker's search path).
// "" when neither tells: then the version is not compared.
std::string NcclVersion(const Environment& env) {
  if (std::optional<std::string> declared = env.Get("HETRUN_NCCL_VERSION")) return *declared;
  void* handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return "";
  std::string version;
  using GetVersionFn = int (*)(int*);
  if (auto get = reinterpret_cast<GetVersionFn>(dlsym(handle, "ncclGetVersion"))) {
    int code = 0;
    // NCCL >= 2.9 encodes MAJOR*10000 + MINOR*100 + PATCH.
    if (get(&code) == 0 && code > 0) {
      version = fmt::format("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100);
    }
  }
  dlclose(handle);
  return version;
}

std::string InstanceId(const std::string& host) {
  std::random_device random;
  return fmt::format("{}:{}:{:08x}", host, getpid(), random());
}

// ---- kernel images ----

bool ArchCheckActive(const PreflightOptions& options) {
  return !options.scan_paths.empty() || options.scan_torch || !options.torch_lib.empty() ||
         options.arch_list.has_value();
}

struct ImageScan {
  std::vector<arch::ScannedFile> files;
  std::optional<arch::ArchList> arch_list;
};

Result<ImageScan> ScanImage(const PreflightOptions& options, const Environment& env) {
  ImageScan scan;
  std::vector<std::string> paths = options.scan_paths;
  if (!options.torch_lib.empty()) {
    paths.push_back(options.torch_lib);
  } else if (options.scan_torch) {
    HETRUN_ASSIGN_OR_RETURN(std::string lib, FindTorchLibDir(env));
    paths.push_back(lib);
  }
  std::optional<std::string> list_text = options.arch_list;
  if (!list_text) {
    if (std::optional<std::string> from_env = env.Get("TORCH_CUDA_ARCH_LIST");
        from_env && !from_env->empty()) {
      list_text = from_env;
    }
  }
  if (list_text) {
    Result<arch::ArchList> list = arch::ParseTorchCudaArchList(*list_text);
    if (!list.ok()) return UsageError("--arch-list: " + list.status().message());
    scan.arch_list = *list;
  }
  scan.files = arch::ScanKernelImages(paths);
  return scan;
}

std::string_view FitWord(arch::ImageFit fit) {
  switch (fit) {
    case arch::ImageFit::kSass:
      return "sass";
    case arch::ImageFit::kPtxJit:
      return "ptx-jit";
    case arch::ImageFit::kNone:
      return "missing";
  }
  return "missing";
}

// The `hetrun check` verdicts of this node's image for `targets`, as rows.
Result<std::vector<ArchRow>> ArchRows(const ImageScan& scan,
                                      const std::vector<std::string>& targets, bool strict) {
  std::vector<arch::ComputeCapability> caps;
  for (const std::string& t : targets) {
    HETRUN_ASSIGN_OR_RETURN(arch::ComputeCapability cc, arch::ParseComputeCapability(t));
    caps.push_back(cc);
  }
  std::vector<ArchRow> rows;
  if (caps.empty()) return rows;
  arch::ArchCheckReport report = arch::CheckKernelImages(scan.files, caps, strict, scan.arch_list);
  for (size_t t = 0; t < caps.size(); ++t) {
    if (report.arch_list) {
      const arch::ArchListCoverage& c = report.arch_list_coverage[t];
      rows.push_back({targets[t], "TORCH_CUDA_ARCH_LIST=\"" + report.arch_list->text + "\"",
                      std::string(FitWord(c.fit)) + (c.via.empty() ? "" : " via " + c.via),
                      c.fit == arch::ImageFit::kNone});
    }
    for (const arch::FileCheck& file : report.files) {
      if (file.error) {
        rows.push_back({targets[t], file.path, "error: " + file.error->message(), true});
        continue;
      }
      const arch::FileVerdict& v = file.verdicts[t];
      std::string verdict(arch::VerdictName(v.verdict));
      if (v.verdict == arch::Verdict::kPartial) {
        verdict += fmt::format(" {}/{}", v.sass + v.ptx_jit, v.modules);
      }
      rows.push_back({targets[t], file.path, verdict, arch::VerdictFails(v.verdict, strict)});
    }
  }
  return rows;
}

std::string ArchTable(
    const std::vector<std::pair<const NodeRecord*, std::vector<ArchRow>>>& nodes) {
  size_t width = 4;
  for (const auto& [record, rows] : nodes) {
    for (const ArchRow& row : rows) width = std::max(width, row.file.size());
  }
  std::string table =
      fmt::format("{:<24} {:<6} {:<{}} {}\n", "NODE", "GPU", "FILE", width, "VERDICT");
  for (const auto& [record, rows] : nodes) {
    for (const ArchRow& row : rows) {
      table += fmt::format("{:<24} {:<6} {:<{}} {}{}\n", NodeLabel(*record), row.target, row.file,
                           width, row.verdict, row.fails ? "  <- FAILS" : "");
    }
  }
  return table;
}

// ---- memory ----

std::vector<GpuInfo> ProbedGpus(const std::vector<ProbedGpu>& probed) {
  std::vector<GpuInfo> gpus;
  for (const ProbedGpu& gpu : probed) gpus.push_back(gpu.info);
  return gpus;
}

Status CheckJob(PreflightResult& result, const NodeRecord& mine,
                const std::optional<ImageScan>& scan, const PreflightOptions& options);

}  // namespace

void AddPreflightOptions(cxxopts::Options& options) {
  std::string baselines;
  for (const memory::MemoryBaseline& b : memory::MemoryBaselines()) {
    baselines += (baselines.empty() ? "" : ", ") + std::string(b.name);
  }
  options.add_options("preflight")(
      "rdzv-timeout",
      "wait this long for every node at the rendezvous, then exit 75 (default 600s)",
      cxxopts::value<std::string>())(
      "peer-timeout",
      "a node without a heartbeat for this long is lost: the others exit 75 (default 15s)",
      cxxopts::value<std::string>())(
      "memory-reserve",
      "GPU memory kept out of the ceiling for contexts, NCCL, fragmentation (default 2GiB)",
      cxxopts::value<std::string>())("memory-baseline",
                                     "cap the ceiling at a reference GPU: " + baselines,
                                     cxxopts::value<std::string>())(
      "min-memory", "memory each worker needs; exit 81 when the ceiling is lower (e.g. 60GiB)",
      cxxopts::value<std::string>())(
      "memory-ceiling",
      "job (default: one ceiling, the smallest GPU of the job) or model (each GPU model its own: "
      "its smallest GPU in the job; not with --memory-baseline)",
      cxxopts::value<std::string>())(
      "scan", "check the kernel images of this file or directory for every GPU of the job",
      cxxopts::value<std::vector<std::string>>())(
      "torch", "check the installed torch's lib/ (python in HETRUN_PYTHON)")(
      "torch-lib", "check this torch lib/ directory", cxxopts::value<std::string>())(
      "arch-list", "a TORCH_CUDA_ARCH_LIST to check (default: $TORCH_CUDA_ARCH_LIST when checking)",
      cxxopts::value<std::string>())("strict", "kernel-image check: partial coverage fails too");
}

namespace {

// --memory-reserve, --min-memory, --memory-ceiling and --memory-baseline (and their variables).
Result<memory::CeilingOptions> ReadCeilingOptions(const cxxopts::ParseResult& parsed,
                                                  const Environment& env) {
  memory::CeilingOptions ceiling;
  using Bytes = std::optional<uint64_t>;
  HETRUN_ASSIGN_OR_RETURN(Bytes reserve,
                          Setting<Bytes>(parsed, "memory-reserve", env, "HETRUN_MEMORY_RESERVE",
                                         std::nullopt, ParseBytesSetting));
  if (reserve) ceiling.reserve_bytes = *reserve;
  HETRUN_ASSIGN_OR_RETURN(
      Bytes min_memory, Setting<Bytes>(parsed, "min-memory", env, "HETRUN_MIN_MEMORY", std::nullopt,
                                       ParseBytesSetting));
  if (min_memory) ceiling.min_memory_bytes = *min_memory;
  HETRUN_ASSIGN_OR_RETURN(
      ceiling.mode,
      Setting<memory::CeilingMode>(
          parsed, "memory-ceiling", env, "HETRUN_MEMORY_CEILING_MODE", memory::CeilingMode::kJob,
          [](std::string_view text) {
            Result<memory::CeilingMode> mode = memory::ParseCeilingMode(text);
            if (mode.ok()) return mode;
            return Result<memory::CeilingMode>(InvalidArgumentError(mode.status().message()));
          }));
  using Baseline = std::optional<memory::MemoryBaseline>;
  HETRUN_ASSIGN_OR_RETURN(
      ceiling.baseline,
      Setting<Baseline>(parsed, "memory-baseline", env, "HETRUN_MEMORY_BASELINE", std::nullopt,
                        [](std::string_view text) -> Result<Baseline> {
                          if (text.empty()) return Baseline();  // empty: no baseline
                          Result<memory::MemoryBaseline> found = memory::FindMemoryBaseline(text);
                          if (found.ok()) return Baseline(*found);
                          // Setting names the flag or variable; keep the reason only.
                          std::string why = found.status().message();
                          if (size_t at = why.find(" is not "); at != std::string::npos) {
                            why = why.substr(at + 1);
                          }
                          return InvalidArgumentError(why);
                        }));
  if (ceiling.mode == memory::CeilingMode::kModel && ceiling.baseline) {
    const std::string refusal =
        "--memory-ceiling model and --memory-baseline " + std::string(ceiling.baseline->name) +
        " (or HETRUN_MEMORY_CEILING_MODE / HETRUN_MEMORY_BASELINE) together: the baseline caps "
        "every rank at one reference GPU, per-model ceilings give each model its own; use one";
    if (parsed.count("memory-ceiling") || parsed.count("memory-baseline")) {
      return UsageError(refusal);
    }
    return InvalidArgumentError(refusal);
  }
  return ceiling;
}

}  // namespace

Result<PreflightOptions> ReadPreflightOptions(const cxxopts::ParseResult& parsed,
                                              const Environment& env) {
  PreflightOptions options;
  HETRUN_ASSIGN_OR_RETURN(options.rdzv_timeout,
                          Setting<milliseconds>(parsed, "rdzv-timeout", env, "HETRUN_RDZV_TIMEOUT",
                                                std::chrono::minutes(10), ParsePositiveDuration));
  HETRUN_ASSIGN_OR_RETURN(options.peer_timeout,
                          Setting<milliseconds>(parsed, "peer-timeout", env, "HETRUN_PEER_TIMEOUT",
                                                std::chrono::seconds(15), ParsePositiveDuration));
  HETRUN_ASSIGN_OR_RETURN(options.ceiling, ReadCeilingOptions(parsed, env));
  if (parsed.count("scan")) options.scan_paths = parsed["scan"].as<std::vector<std::string>>();
  options.scan_torch = parsed.count("torch") > 0;
  if (parsed.count("torch-lib")) options.torch_lib = parsed["torch-lib"].as<std::string>();
  if (parsed.count("arch-list")) options.arch_list = parsed["arch-list"].as<std::string>();
  options.strict = parsed.count("strict") > 0;
  return options;
}

Membership MembershipOf(const Topology& topology) {
  if (topology.per_process)
    return {topology.world_size, topology.ranks.empty() ? 0 : topology.ranks[0]};
  return {topology.nnodes.value, topology.node_rank.value};
}

Result<std::map<std::string, std::string>> PreflightResult::WorkerAdditions(const Environment& env,
                                                                            int local_rank) const {
  std::map<std::string, std::string> add;
  if (rendezvous) add["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  if (!ceiling) return add;
  const bool has_gpu = local_rank >= 0 && static_cast<size_t>(local_rank) < inventory.gpus.size();
  // Job mode: one number for every rank; model mode: this rank's model's (§5.8's caps use it).
  const uint64_t mine = has_gpu
                            ? ceiling->For(inventory.gpus[static_cast<size_t>(local_rank)].model)
                            : ceiling->bytes;
  add["HETRUN_MEMORY_CEILING_BYTES"] = std::to_string(mine);
  if (!memory::TorchSupportsMemoryFraction(torch_version)) return add;
  if (!has_gpu) return add;
  const GpuInfo& gpu = inventory.gpus[static_cast<size_t>(local_rank)];
  // torch multiplies the fraction by the device total; fakes declare only usable memory.
  uint64_t device = gpu.total_bytes != 0 ? gpu.total_bytes : gpu.usable_bytes;
  HETRUN_ASSIGN_OR_RETURN(memory::AllocConfMerge merge,
                          memory::MergeMemoryFraction(env, memory::MemoryFraction(mine, device)));
  if (merge.value) {
    add[merge.variable] = *merge.value;
  } else if (local_rank == 0) {
    spdlog::warn("{}", merge.note);
  }
  return add;
}

namespace {

// This pod's pipeline stage entry for the rendezvous (hetrun/pipeline/node_layout.h):
// HETRUN_STAGE and HETRUN_STAGE_LAYERS (a task's list narrowed to this pod's entry); none when
// either is unset. With them, HETRUN_MICRO_BATCHES (the job's M) when set.
Status FillStageEntry(const Topology& topology, const Environment& env, NodeRecord& mine) {
  std::optional<int> task_index;
  if (topology.task_index) task_index = topology.task_index->value;
  HETRUN_ASSIGN_OR_RETURN(PodStage pod, PodStageVariables(env, task_index));
  auto value = [&](const char* name) -> std::optional<std::string> {
    if (auto it = pod.vars.find(name); it != pod.vars.end()) return it->second;
    return env.Get(name);
  };
  std::optional<std::string> stage = value("HETRUN_STAGE");
  std::optional<std::string> layers = value("HETRUN_STAGE_LAYERS");
  if (!stage || stage->empty() || !layers || layers->empty()) return Status::Ok();
  Result<int64_t> index = ParseIntInRange(*stage, 0, 4096);
  if (!index.ok()) return InvalidArgumentError("HETRUN_STAGE=" + *stage + ": not a stage index");
  const size_t colon = layers->find(':');
  Result<int64_t> first = ParseIntInRange(layers->substr(0, colon), 0, int64_t{1} << 20);
  Result<int64_t> count = colon == std::string::npos
                              ? Result<int64_t>(InvalidArgumentError("no ':'"))
                              : ParseIntInRange(layers->substr(colon + 1), 1, int64_t{1} << 20);
  if (!first.ok() || !count.ok()) {
    return InvalidArgumentError("HETRUN_STAGE_LAYERS=" + *layers + ": not FIRST:COUNT");
  }
  if (std::optional<std::string> m = env.Get("HETRUN_MICRO_BATCHES"); m && !m->empty()) {
    Result<int64_t> micro_batches = ParseIntInRange(*m, 1, int64_t{1} << 20);
    if (!micro_batches.ok()) {
      return InvalidArgumentError("HETRUN_MICRO_BATCHES=" + *m +
                                  ": not a micro-batch count (an integer >= 1)");
    }
    mine.micro_batches = *micro_batches;
  }
  mine.stage = static_cast<int>(*index);
  mine.stage_first_layer = *first;
  mine.stage_layers = *count;
  mine.ranks = topology.ranks;
  return Status::Ok();
}

// This node's record: its GPUs (declared, or probed in a child: this process forks the workers)
// and, with a kernel-image check, its verdicts for its own GPUs.
Result<NodeRecord> DescribeNode(PreflightResult& result, const Topology& topology,
                                const std::optional<Inventory>& declared,
                                const PreflightOptions& options, const Environment& env,
                                std::optional<ImageScan>* scan) {
  result.torch_version = HETRUN_TORCH_VERSION;
  if (declared) {
    result.inventory = *declared;
  } else {
    HETRUN_ASSIGN_OR_RETURN(std::vector<ProbedGpu> probed, ProbeGpusInChild());
    result.inventory.gpus = ProbedGpus(probed);
    result.inventory.source = probed.empty() ? InventorySource::kNone : InventorySource::kProbe;
    result.inventory.source_detail = probed.empty() ? "none (no GPU found)" : "CUDA probe";
  }
  const Membership membership = MembershipOf(topology);
  NodeRecord mine;
  mine.hostname = Hostname();
  mine.node_rank = membership.member;
  mine.nnodes = membership.members;
  mine.world_size = topology.world_size;
  mine.local_world_size = topology.per_process ? 1 : static_cast<int>(topology.ranks.size());
  mine.task = topology.task ? topology.task->value : "";
  mine.instance = InstanceId(mine.hostname);
  mine.hetrun_version = HETRUN_VERSION_STRING;
  mine.inventory_source = result.inventory.source_detail;
  mine.gpus = result.inventory.gpus;
  mine.check_collectives = options.check_collectives;
  if (ArchCheckActive(options)) {
    HETRUN_ASSIGN_OR_RETURN(ImageScan scanned, ScanImage(options, env));
    *scan = std::move(scanned);
    mine.arch_checked = true;
    std::vector<NodeRecord> one{mine};
    HETRUN_ASSIGN_OR_RETURN(mine.arch_rows, ArchRows(**scan, JobCapabilities(one), options.strict));
  }
  if (membership.members > 1) mine.nccl_version = NcclVersion(env);
  HETRUN_RETURN_IF_ERROR(FillStageEntry(topology, env, mine));
  mine.layout_state_path = options.layout_state_path;
  mine.layout_state = options.layout_state;
  return mine;
}

}  // namespace

Result<PreflightResult> RunPreflight(const Topology& topology,
                                     const std::optional<Inventory>& declared,
                                     const PreflightOptions& options, const Environment& env) {
  PreflightResult result;
  std::optional<ImageScan> scan;
  HETRUN_ASSIGN_OR_RETURN(NodeRecord mine,
                          DescribeNode(result, topology, declared, options, env, &scan));
  if (options.interrupted && options.interrupted() != 0) {
    return UnavailableError("stopped before the rendezvous");
  }
  if (mine.nnodes <= 1 || options.local_only) {
    result.records.push_back(mine);
    HETRUN_RETURN_IF_ERROR(CheckJob(result, mine, scan, options));
    return result;
  }
  auto started = std::chrono::steady_clock::now();
  HETRUN_ASSIGN_OR_RETURN(result.rendezvous, OpenRendezvous(topology, options, env));
  auto opened = std::chrono::steady_clock::now();
  Result<std::vector<NodeRecord>> records = result.rendezvous->Join(mine);
  // A node 0 of the previous incarnation (its pod still terminating) closed its store: connect
  // again and wait for the new node 0, within --rdzv-timeout of the start.
  while (!records.ok() && result.rendezvous->StalePeer() &&
         std::chrono::steady_clock::now() + std::chrono::seconds(1) <
             started + options.rdzv_timeout &&
         !(options.interrupted && options.interrupted() != 0)) {
    spdlog::warn("{}; waiting for the new node 0", records.status().message());
    result.rendezvous.reset();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    HETRUN_ASSIGN_OR_RETURN(result.rendezvous, OpenRendezvous(topology, options, env));
    records = result.rendezvous->Join(mine);
  }
  if (!records.ok()) {
    result.rendezvous->Finish(ExitCodeFor(records.status()));
    return records.status();
  }
  result.records = std::move(*records);
  auto ms = [](auto d) { return std::chrono::duration_cast<milliseconds>(d).count(); };
  spdlog::info(
      "rendezvous at {}:{}: {} nodes in {} ms (library load and connect {} ms, then "
      "waiting for the others {} ms)",
      topology.master_addr.value, topology.master_port.value, mine.nnodes,
      ms(std::chrono::steady_clock::now() - started), ms(opened - started),
      ms(std::chrono::steady_clock::now() - opened));
  if (Status checked = CheckJob(result, mine, scan, options); !checked.ok()) {
    // Every node reaches the same verdict; node 0 keeps the store up until the others have
    // read the records and published their exit code.
    result.rendezvous->Finish(ExitCodeFor(checked));
    return checked;
  }
  SignalsBlockedForNewThreads blocked;
  HETRUN_RETURN_IF_ERROR(result.rendezvous->StartHeartbeat());
  return result;
}

namespace {

// 3. Kernel images for every GPU capability of the job: each node's own rows, plus the rows the
// nodes that checked an image publish for the capabilities only other nodes have.
Status CheckImages(PreflightResult& result, const NodeRecord& mine,
                   const std::optional<ImageScan>& scan, const PreflightOptions& options) {
  const std::vector<std::string> job_caps = JobCapabilities(result.records);
  std::vector<std::pair<const NodeRecord*, std::vector<ArchRow>>> table_rows;
  std::vector<int> publishers;
  for (const NodeRecord& record : result.records) {
    if (!record.arch_checked) continue;
    table_rows.push_back({&record, record.arch_rows});
    std::set<std::string> have;
    for (const ArchRow& row : record.arch_rows) have.insert(row.target);
    for (const std::string& cc : job_caps) {
      if (!have.count(cc)) {
        publishers.push_back(record.node_rank);
        break;
      }
    }
  }
  if (!publishers.empty() && result.rendezvous) {
    std::string extra = "[]";
    if (scan) {
      std::set<std::string> have;
      for (const ArchRow& row : mine.arch_rows) have.insert(row.target);
      std::vector<std::string> missing;
      for (const std::string& cc : job_caps) {
        if (!have.count(cc)) missing.push_back(cc);
      }
      HETRUN_ASSIGN_OR_RETURN(std::vector<ArchRow> rows, ArchRows(*scan, missing, options.strict));
      extra = EncodeArchRows(rows);
    }
    HETRUN_ASSIGN_OR_RETURN(std::vector<std::string> values,
                            result.rendezvous->Exchange("arch", publishers, extra));
    for (size_t i = 0; i < publishers.size(); ++i) {
      HETRUN_ASSIGN_OR_RETURN(std::vector<ArchRow> rows, DecodeArchRows(values[i]));
      for (auto& [record, node_rows] : table_rows) {
        if (record->node_rank == publishers[i]) {
          node_rows.insert(node_rows.end(), rows.begin(), rows.end());
        }
      }
    }
  }
  if (!table_rows.empty()) {
    for (auto& [record, rows] : table_rows) {
      std::stable_sort(rows.begin(), rows.end(), [](const ArchRow& a, const ArchRow& b) {
        return a.file != b.file ? a.file < b.file : a.target < b.target;
      });
    }
    result.arch_table = ArchTable(table_rows);
    bool mismatch = false, unreadable = false;
    for (const auto& [record, rows] : table_rows) {
      for (const ArchRow& row : rows) {
        if (!row.fails) continue;
        (row.verdict.rfind("error", 0) == 0 ? unreadable : mismatch) = true;
      }
    }
    if (mismatch) {
      return ArchMismatchError("kernel images do not run on every GPU of the job:\n" +
                               result.arch_table);
    }
    if (unreadable) {
      return InvalidArgumentError("kernel-image check could not read some files:\n" +
                                  result.arch_table);
    }
    // The table is printed on success too: image CI logs and pod logs show what was checked.
    spdlog::info("kernel images run on every GPU of the job ({}):\n{}", fmt::join(job_caps, ", "),
                 result.arch_table);
  }
  return Status::Ok();
}

Status CheckJob(PreflightResult& result, const NodeRecord& mine,
                const std::optional<ImageScan>& scan, const PreflightOptions& options) {
  HETRUN_RETURN_IF_ERROR(CheckImages(result, mine, scan, options));
  // 4. The memory ceiling over every GPU of the job.
  std::vector<memory::JobGpu> gpus = JobGpus(result.records);
  if (gpus.empty()) {
    if (options.ceiling.min_memory_bytes > 0) {
      spdlog::warn("--min-memory ignored: no GPU in the job");
    }
    return Status::Ok();
  }
  HETRUN_ASSIGN_OR_RETURN(memory::Ceiling ceiling, memory::ComputeCeiling(gpus, options.ceiling));
  HETRUN_RETURN_IF_ERROR(memory::CheckFreeMemory(gpus, ceiling));
  spdlog::info("{}", ceiling.explanation);
  result.ceiling = ceiling;
  return Status::Ok();
}

}  // namespace
}  // namespace hetrun::launcher

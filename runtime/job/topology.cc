// ResolveTopology: every convention present offers candidate values for each field; the one of
// highest precedence (docs/ARCHITECTURE.md §4.1) wins, and every lower one that differs is recorded
// as an override. Conventions are read in their own files (per_process_launchers.cc,
// volcano_tasks.cc, jobset_pods.cc); Kubeflow, the Volcano pytorch plugin, HETRUN_* and flags are
// read here.
#include "hetrun/job/topology.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "hetrun/base/units.h"
#include "job/topology_internal.h"

namespace hetrun {
namespace {

using namespace topology_internal;

constexpr int kVolcanoPort = 23456;  // the Volcano pytorch plugin's and Kubeflow's default
constexpr int kTorchrunPort = 29500;

std::string Text(int value) {
  return std::to_string(value);
}
std::string Text(const std::string& value) {
  return value;
}

template <typename T>
class Field {
 public:
  explicit Field(std::string name) : name_(std::move(name)) {}
  void Add(Candidate<T> candidate) { candidates_.push_back(std::move(candidate)); }
  void Add(const std::optional<Candidate<T>>& candidate) {
    if (candidate) candidates_.push_back(*candidate);
  }
  /// The value of highest precedence (ties: first added); differing lower values, except
  /// defaults, are appended to `overrides`.
  std::optional<Candidate<T>> Resolve(std::vector<Override>* overrides) const {
    if (candidates_.empty()) return std::nullopt;
    std::vector<Candidate<T>> sorted = candidates_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.level < b.level; });
    const Candidate<T>& winner = sorted.front();
    for (size_t i = 1; i < sorted.size(); ++i) {
      if (sorted[i].level == kDefaultLevel || sorted[i].value == winner.value) continue;
      overrides->push_back(Override{name_, Text(winner.value) + " (" + winner.source + ")",
                                    Text(sorted[i].value) + " (" + sorted[i].source + ")"});
    }
    return winner;
  }
  /// The highest precedence level offered, or kDefaultLevel + 1 when none.
  int BestLevel() const {
    int best = kDefaultLevel + 1;
    for (const auto& c : candidates_) best = std::min(best, c.level);
    return best;
  }

 private:
  std::string name_;
  std::vector<Candidate<T>> candidates_;
};

struct Fields {
  Field<int> nnodes{"nnodes"};
  Field<int> node_rank{"node_rank"};
  Field<std::string> nproc{"nproc_per_node"};  // "auto" or a number
  Field<std::string> master_addr{"master_addr"};
  Field<int> master_port{"master_port"};
};

// One setting given as a flag or a HETRUN_* variable (levels 1 and 2).
struct Setting {
  std::string_view flag;
  std::string_view var;
};
constexpr Setting kNnodes = {"--nnodes", "HETRUN_NNODES"};
constexpr Setting kNodeRank = {"--node-rank", "HETRUN_NODE_RANK"};
constexpr Setting kNproc = {"--nproc-per-node", "HETRUN_NPROC_PER_NODE"};
constexpr Setting kMasterAddr = {"--master-addr", "HETRUN_MASTER_ADDR"};
constexpr Setting kMasterPort = {"--master-port", "HETRUN_MASTER_PORT"};

// Reads `setting` from the flag (level 1, a usage error when bad) and the variable (level 2).
template <typename T, typename Parse>
Status AddSetting(const std::optional<std::string>& flag, const Environment& env,
                  const Setting& setting, Field<T>* field, Parse parse) {
  if (flag) {
    std::string source = std::string(setting.flag) + " flag";
    auto value = parse(*flag);
    if (!value.ok()) {
      return BadValue(setting.flag, *flag, source, value.status().message(), StatusCode::kUsage);
    }
    field->Add(Candidate<T>{*value, source, kFlagLevel});
  }
  if (std::optional<std::string> text = env.Get(setting.var)) {
    std::string source = std::string(setting.var);
    auto value = parse(*text);
    if (!value.ok()) return BadValue(setting.var, *text, "environment", value.status().message());
    field->Add(Candidate<T>{*value, source, kHetrunLevel});
  }
  return Status::Ok();
}

auto IntParser(int64_t min, int64_t max) {
  return [min, max](std::string_view text) -> Result<int> {
    HETRUN_ASSIGN_OR_RETURN(int64_t value, ParseIntInRange(text, min, max));
    return static_cast<int>(value);
  };
}

Result<std::string> ParseNproc(std::string_view text) {
  if (text == "auto") return std::string("auto");
  auto value = ParseIntInRange(text, 1, kMaxProcPerNode);
  if (!value.ok()) {
    return InvalidArgumentError("expected auto or a number of workers from 1 to " +
                                std::to_string(kMaxProcPerNode));
  }
  return std::to_string(*value);
}

Result<std::string> ParseHost(std::string_view text) {
  HETRUN_RETURN_IF_ERROR(CheckHost("host", text, "value"));
  return std::string(text);
}

Status AddFlagsAndHetrunVars(const TopologyInputs& in, Fields* f) {
  const TopologyFlags& flags = in.flags;
  HETRUN_RETURN_IF_ERROR(
      AddSetting(flags.nnodes, in.env, kNnodes, &f->nnodes, IntParser(1, kMaxNodes)));
  HETRUN_RETURN_IF_ERROR(
      AddSetting(flags.node_rank, in.env, kNodeRank, &f->node_rank, IntParser(0, kMaxNodes - 1)));
  HETRUN_RETURN_IF_ERROR(AddSetting(flags.nproc_per_node, in.env, kNproc, &f->nproc, ParseNproc));
  // CheckHost's own message names the value; keep only its reason.
  auto host = [](std::string_view text) -> Result<std::string> {
    auto ok = ParseHost(text);
    if (!ok.ok()) {
      std::string why = ok.status().message();
      return InvalidArgumentError(why.substr(why.find("): ") + 3));
    }
    return ok;
  };
  HETRUN_RETURN_IF_ERROR(AddSetting(flags.master_addr, in.env, kMasterAddr, &f->master_addr, host));
  HETRUN_RETURN_IF_ERROR(
      AddSetting(flags.master_port, in.env, kMasterPort, &f->master_port, IntParser(1, 65535)));
  return Status::Ok();
}

// MASTER_ADDR / MASTER_PORT, labelled with the convention that set them.
Status AddMasterFromEnv(const Environment& env, const std::string& label, int level, Fields* f) {
  if (std::optional<std::string> addr = env.Get("MASTER_ADDR")) {
    std::string source = "MASTER_ADDR, " + label;
    HETRUN_RETURN_IF_ERROR(CheckHost("MASTER_ADDR", *addr, source));
    f->master_addr.Add(Candidate<std::string>{*addr, source, level});
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> port,
                          ReadEnvInt(env, "MASTER_PORT", "MASTER_PORT, " + label, 1, 65535));
  if (port) f->master_port.Add(Candidate<int>{*port, "MASTER_PORT, " + label, level});
  return Status::Ok();
}

bool HasKubeflow(const Environment& env) {
  return env.Get("PET_NNODES") || env.Get("PET_NODE_RANK") || env.Get("PET_NPROC_PER_NODE");
}

// Kubeflow PyTorchJob (level 4). PET_NNODES is "N" or elastic "MIN:MAX"; hetrun runs a fixed
// node count, so MIN must equal MAX. There WORLD_SIZE counts processes and is not read.
Status AddKubeflow(const Environment& env, Fields* f) {
  constexpr std::string_view kLabel = "Kubeflow PyTorchJob";
  std::string label(kLabel);
  if (std::optional<std::string> text = env.Get("PET_NNODES")) {
    std::string source = "PET_NNODES, " + label;
    std::vector<std::string_view> parts = SplitOn(*text, ':');
    if (parts.size() > 2) return BadValue("PET_NNODES", *text, source, "expected N or MIN:MAX");
    std::vector<int64_t> values;
    for (std::string_view part : parts) {
      auto value = ParseIntInRange(part, 1, kMaxNodes);
      if (!value.ok()) return BadValue("PET_NNODES", *text, source, value.status().message());
      values.push_back(*value);
    }
    if (values.size() == 2 && values[0] != values[1]) {
      return BadValue("PET_NNODES", *text, source,
                      "elastic node ranges are not supported: hetrun needs a fixed node count");
    }
    f->nnodes.Add(Candidate<int>{static_cast<int>(values[0]), source, kKubeflowLevel});
  }
  HETRUN_ASSIGN_OR_RETURN(
      std::optional<int> node_rank,
      ReadEnvInt(env, "PET_NODE_RANK", "PET_NODE_RANK, " + label, 0, kMaxNodes - 1));
  if (node_rank) {
    f->node_rank.Add(Candidate<int>{*node_rank, "PET_NODE_RANK, " + label, kKubeflowLevel});
  }
  if (std::optional<std::string> text = env.Get("PET_NPROC_PER_NODE")) {
    std::string source = "PET_NPROC_PER_NODE, " + label;
    std::string value = *text == "gpu" ? "auto" : *text;
    auto parsed = ParseNproc(value);
    if (!parsed.ok()) {
      return BadValue(
          "PET_NPROC_PER_NODE", *text, source,
          "expected auto, gpu or a number of workers from 1 to " + std::to_string(kMaxProcPerNode));
    }
    f->nproc.Add(Candidate<std::string>{*parsed, source, kKubeflowLevel});
  }
  HETRUN_RETURN_IF_ERROR(AddMasterFromEnv(env, label, kKubeflowLevel, f));
  if (!env.Get("MASTER_ADDR")) {
    if (std::optional<std::string> addr = env.Get("PET_MASTER_ADDR")) {
      std::string source = "PET_MASTER_ADDR, " + label;
      HETRUN_RETURN_IF_ERROR(CheckHost("PET_MASTER_ADDR", *addr, source));
      f->master_addr.Add(Candidate<std::string>{*addr, source, kKubeflowLevel});
    }
  }
  if (!env.Get("MASTER_PORT")) {
    HETRUN_ASSIGN_OR_RETURN(
        std::optional<int> port,
        ReadEnvInt(env, "PET_MASTER_PORT", "PET_MASTER_PORT, " + label, 1, 65535));
    if (port)
      f->master_port.Add(Candidate<int>{*port, "PET_MASTER_PORT, " + label, kKubeflowLevel});
  }
  f->master_port.Add(
      Candidate<int>{kVolcanoPort, "default: Kubeflow PyTorchJob port", kDefaultLevel});
  return Status::Ok();
}

// The Volcano pytorch plugin (level 5): WORLD_SIZE and RANK count pods.
Status AddVolcanoPytorch(const Environment& env, Fields* f, int* rank_out) {
  constexpr std::string_view kLabel = "Volcano pytorch plugin";
  std::string label(kLabel);
  for (std::string_view var : {"WORLD_SIZE", "RANK"}) {
    if (!env.Get(var)) {
      std::string other = var == "RANK" ? "WORLD_SIZE" : "RANK";
      return InvalidArgumentError(std::string(var) + " is not set (" + label + "), but " + other +
                                  "='" + Shown(env.Get(other).value_or("")) +
                                  "' is: the plugin sets both");
    }
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> world,
                          ReadEnvInt(env, "WORLD_SIZE", "WORLD_SIZE, " + label, 1, kMaxNodes));
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> rank,
                          ReadEnvInt(env, "RANK", "RANK, " + label, 0, kMaxNodes - 1));
  if (*rank >= *world) {
    return BadValue("RANK", std::to_string(*rank), "RANK, " + label,
                    "must be less than WORLD_SIZE=" + std::to_string(*world));
  }
  *rank_out = *rank;
  f->nnodes.Add(
      Candidate<int>{*world, "WORLD_SIZE, " + label + ": counts pods", kVolcanoPytorchLevel});
  f->node_rank.Add(Candidate<int>{*rank, "RANK, " + label + ": counts pods", kVolcanoPytorchLevel});
  HETRUN_RETURN_IF_ERROR(AddMasterFromEnv(env, label, kVolcanoPytorchLevel, f));
  f->master_port.Add(
      Candidate<int>{kVolcanoPort, "default: Volcano pytorch plugin port", kDefaultLevel});
  return Status::Ok();
}

// The pytorch plugin gives every replica of the master task RANK 0: with more than one, ranks
// collide. The svc plugin's task list shows the replicas.
Status CheckSingleMaster(const VolcanoJob& job, int rank) {
  for (const TaskInfo& task : job.tasks) {
    bool is_master =
        task.name == "master" || (rank == 0 && job.task && job.task->value == task.name);
    if (!is_master || task.replicas <= 1) continue;
    std::string key = task.name;
    std::transform(key.begin(), key.end(), key.begin(),
                   [](char c) { return c == '-' ? '_' : static_cast<char>(std::toupper(c)); });
    return BadValue("VC_" + key + "_NUM", std::to_string(task.replicas), "Volcano svc plugin",
                    "the Volcano pytorch plugin gives every replica of master task '" + task.name +
                        "' RANK 0; use one master replica");
  }
  return Status::Ok();
}

std::string ConventionOfLevel(int level, const std::vector<PerProcessInfo>& launchers) {
  switch (level) {
    case kFlagLevel:
      return "flags";
    case kHetrunLevel:
      return "hetrun-env";
    case kPerProcessLevel:
    case kDerivedLevel:
      return launchers.empty() ? "single-node" : launchers.front().convention;
    case kKubeflowLevel:
      return "kubeflow-pytorchjob";
    case kVolcanoPytorchLevel:
      return "volcano-pytorch";
    case kVolcanoSvcLevel:
      return "volcano-svc";
    case kJobSetLevel:
      return "jobset";
    default:
      return "single-node";
  }
}

void LogOverrides(const Topology& topology) {
  for (const Override& o : topology.overrides) {
    spdlog::info("topology: {}={} overrides {}", o.field, o.winner, o.overridden);
  }
}

// Every candidate the conventions offer, gathered before any field is resolved.
struct Gathered {
  Fields f;
  std::vector<PerProcessInfo> launchers;
  // Per-process launchers only: this process's own rank and sizes.
  Field<int> rank{"rank"}, size{"world_size"}, local_rank{"local_rank"}, local_size{"local_size"};
  bool kubeflow = false;
  std::optional<VolcanoJob> volcano;
  std::optional<JobSetPod> jobset;
};

// Level 7: a JobSet pod (HETRUN_JOBSET_*). Its task and index count where no Volcano job gave
// them.
Status AddJobSet(const Environment& env, Gathered* g, Topology* topology) {
  HETRUN_ASSIGN_OR_RETURN(g->jobset, ReadJobSetPod(env));
  if (!g->jobset) return Status::Ok();
  const JobSetPod& jobset = *g->jobset;
  if (!jobset.nnodes && g->f.nnodes.BestLevel() > kJobSetLevel) {
    return InvalidArgumentError(
        "HETRUN_JOBSET_REPLICAS is not set (JobSet): the number of nodes is unknown; "
        "`hetrun plan --emit jobset` writes it, or set HETRUN_NNODES");
  }
  g->f.nnodes.Add(jobset.nnodes);
  g->f.node_rank.Add(jobset.node_rank);
  g->f.master_addr.Add(jobset.master_addr);
  if (!g->volcano) {
    topology->tasks = jobset.tasks;
    topology->task = jobset.task;
    topology->task_index = jobset.task_index;
  }
  topology->incarnation = jobset.incarnation;
  return Status::Ok();
}

// Level 3: per-process launchers. With workers per node given explicitly (flag or
// HETRUN_NPROC_PER_NODE), each launched process is instead one hetrun per node.
Status GatherPerProcess(const Environment& env, Gathered* g, Topology* topology) {
  HETRUN_ASSIGN_OR_RETURN(g->launchers, ReadPerProcessLaunchers(env));
  bool explicit_nproc = g->f.nproc.BestLevel() <= kHetrunLevel;
  topology->per_process = !g->launchers.empty() && !explicit_nproc;
  for (const PerProcessInfo& launcher : g->launchers) {
    if (topology->per_process) {
      g->f.nproc.Add(Candidate<std::string>{"1", launcher.label + ": each process is one worker",
                                            kPerProcessLevel});
      g->f.nnodes.Add(launcher.nnodes);
      g->f.node_rank.Add(launcher.node_rank);
      g->rank.Add(launcher.rank);
      g->size.Add(launcher.size);
      g->local_rank.Add(launcher.local_rank);
      g->local_size.Add(launcher.local_size);
    } else {
      std::string why = ": one hetrun per node (workers per node given)";
      g->f.nnodes.Add(
          Candidate<int>{launcher.size.value, launcher.size.source + why, kPerProcessLevel});
      g->f.node_rank.Add(
          Candidate<int>{launcher.rank.value, launcher.rank.source + why, kPerProcessLevel});
    }
  }
  return Status::Ok();
}

// Levels 1 to 8, in precedence order: flags and HETRUN_*, per-process launchers, Kubeflow or the
// Volcano pytorch plugin, Volcano's svc and env plugins, JobSet, defaults.
Status GatherCandidates(const TopologyInputs& in, Gathered* g, Topology* topology) {
  const Environment& env = in.env;
  HETRUN_RETURN_IF_ERROR(AddFlagsAndHetrunVars(in, &g->f));
  HETRUN_RETURN_IF_ERROR(GatherPerProcess(env, g, topology));

  // Levels 4 and 5: Kubeflow PyTorchJob, else the Volcano pytorch plugin (both set MASTER_ADDR;
  // Kubeflow's RANK and WORLD_SIZE count processes, the pytorch plugin's count pods).
  g->kubeflow = HasKubeflow(env);
  bool volcano_pytorch = !g->kubeflow && (env.Get("WORLD_SIZE") || env.Get("RANK"));
  int pytorch_rank = -1;
  if (g->kubeflow) {
    HETRUN_RETURN_IF_ERROR(AddKubeflow(env, &g->f));
  } else if (volcano_pytorch) {
    HETRUN_RETURN_IF_ERROR(AddVolcanoPytorch(env, &g->f, &pytorch_rank));
  } else {
    HETRUN_RETURN_IF_ERROR(AddMasterFromEnv(env, "environment", kVolcanoSvcLevel, &g->f));
  }

  // Level 6: Volcano svc + env plugins.
  HETRUN_ASSIGN_OR_RETURN(g->volcano, ReadVolcanoJob(in));
  if (const std::optional<VolcanoJob>& volcano = g->volcano) {
    if (volcano_pytorch) HETRUN_RETURN_IF_ERROR(CheckSingleMaster(*volcano, pytorch_rank));
    g->f.nnodes.Add(volcano->nnodes);
    g->f.node_rank.Add(volcano->node_rank);
    g->f.master_addr.Add(volcano->master_addr);
    g->f.master_port.Add(Candidate<int>{kVolcanoPort, "default: Volcano's port", kDefaultLevel});
    topology->tasks = volcano->tasks;
    topology->task = volcano->task;
    topology->task_index = volcano->task_index;
    if (!volcano->own_task_error.ok() && g->f.node_rank.BestLevel() >= kVolcanoSvcLevel &&
        g->f.nnodes.BestLevel() == kVolcanoSvcLevel) {
      return volcano->own_task_error;
    }
  }

  HETRUN_RETURN_IF_ERROR(AddJobSet(env, g, topology));

  // Level 8: nothing. One node; its rank is 0 only when it is the only node.
  g->f.nnodes.Add(Candidate<int>{1, "default: single node", kDefaultLevel});
  g->f.master_port.Add(Candidate<int>{kTorchrunPort, "default: torchrun's port", kDefaultLevel});
  g->f.nproc.Add(
      Candidate<std::string>{"auto", "default: one worker per local GPU", kDefaultLevel});
  return Status::Ok();
}

// This node's rank: a single node defaults to 0; it must be below nnodes.
Result<Candidate<int>> ResolveNodeRank(const Fields& f, const Candidate<int>& nnodes,
                                       std::vector<Override>* overrides) {
  std::optional<Candidate<int>> node_rank = f.node_rank.Resolve(overrides);
  if (!node_rank) {
    if (nnodes.value != 1) {
      return NotFoundError("this node's rank is unknown: nnodes=" + std::to_string(nnodes.value) +
                           " (" + nnodes.source +
                           ") but nothing sets the node rank; set --node-rank or "
                           "HETRUN_NODE_RANK");
    }
    node_rank = Candidate<int>{0, "default: single node", kDefaultLevel};
  }
  if (node_rank->value >= nnodes.value) {
    std::string name = node_rank->source.substr(0, node_rank->source.find_first_of(", "));
    return Status(
        node_rank->level == kFlagLevel ? StatusCode::kUsage : StatusCode::kInvalidArgument,
        name + "='" + std::to_string(node_rank->value) + "' (" + node_rank->source +
            "): node rank must be less than nnodes=" + std::to_string(nnodes.value) + " (" +
            nnodes.source + ")");
  }
  return *node_rank;
}

// Resolves nnodes, the node rank, the master and the workers per node into `topology`; returns
// the node rank's candidate (its level decides a note in AssignRanks).
Result<Candidate<int>> ResolveFields(const TopologyInputs& in, const Gathered& g,
                                     Topology* topology) {
  std::vector<Override>& overrides = topology->overrides;
  Candidate<int> nnodes = *g.f.nnodes.Resolve(&overrides);
  HETRUN_ASSIGN_OR_RETURN(Candidate<int> node_rank, ResolveNodeRank(g.f, nnodes, &overrides));
  std::optional<Candidate<std::string>> addr = g.f.master_addr.Resolve(&overrides);
  if (!addr) {
    if (nnodes.value != 1) {
      return NotFoundError(
          "the master address is unknown for a job of nnodes=" + std::to_string(nnodes.value) +
          " (" + nnodes.source + "); set --master-addr, HETRUN_MASTER_ADDR or MASTER_ADDR");
    }
    addr = Candidate<std::string>{"127.0.0.1", "default: single node", kDefaultLevel};
  }
  Candidate<int> port = *g.f.master_port.Resolve(&overrides);
  Candidate<std::string> nproc = *g.f.nproc.Resolve(&overrides);

  topology->source = topology->per_process ? g.launchers.front().convention
                                           : ConventionOfLevel(nnodes.level, g.launchers);
  topology->nnodes = {nnodes.value, nnodes.source};
  topology->node_rank = {node_rank.value, node_rank.source};
  topology->master_addr = {addr->value, addr->source};
  topology->master_port = {port.value, port.source};
  if (nproc.value == "auto") {
    bool any = in.local_gpu_count > 0;
    topology->nproc_per_node = {any ? in.local_gpu_count : 1,
                                (any ? "auto: " + std::to_string(in.local_gpu_count) + " local GPUs"
                                     : std::string("auto: no local GPU, one worker")) +
                                    " (" + nproc.source + ")"};
  } else {
    topology->nproc_per_node = {static_cast<int>(*ParseInt(nproc.value)), nproc.source};
  }
  return node_rank;
}

// The global and local ranks of this node's workers, and the notes a reader should see.
void AssignRanks(const Gathered& g, const Candidate<int>& node_rank, Topology* topology) {
  std::vector<Override>& overrides = topology->overrides;
  if (topology->per_process) {
    int r = g.rank.Resolve(&overrides)->value;
    topology->world_size = g.size.Resolve(&overrides)->value;
    int lr = g.local_rank.Resolve(&overrides)->value;
    topology->local_world_size = g.local_size.Resolve(&overrides)->value;
    topology->ranks = {r};
    topology->local_ranks = {lr};
    for (const PerProcessInfo& launcher : g.launchers) {
      if (!launcher.note.empty() && node_rank.level == kDerivedLevel) {
        topology->notes.push_back(launcher.note);
        break;
      }
    }
  } else {
    int n = topology->nproc_per_node.value;
    topology->world_size = topology->nnodes.value * n;
    topology->local_world_size = n;
    for (int i = 0; i < n; ++i) {
      topology->ranks.push_back(node_rank.value * n + i);
      topology->local_ranks.push_back(i);
    }
  }
}

}  // namespace

bool NeedsLocalGpuCount(const Environment& env, const TopologyFlags& flags) {
  if (flags.nproc_per_node) return *flags.nproc_per_node == "auto";
  if (std::optional<std::string> value = env.Get("HETRUN_NPROC_PER_NODE")) return *value == "auto";
  if (topology_internal::HasPerProcessLauncher(env)) return false;
  if (std::optional<std::string> value = env.Get("PET_NPROC_PER_NODE")) {
    return *value == "auto" || *value == "gpu";
  }
  return true;
}

Result<Topology> ResolveTopology(const TopologyInputs& in) {
  Topology topology;
  Gathered gathered;
  HETRUN_RETURN_IF_ERROR(GatherCandidates(in, &gathered, &topology));
  HETRUN_ASSIGN_OR_RETURN(Candidate<int> node_rank, ResolveFields(in, gathered, &topology));
  AssignRanks(gathered, node_rank, &topology);
  if (gathered.kubeflow && in.env.Get("WORLD_SIZE")) {
    topology.notes.push_back("WORLD_SIZE counts processes under Kubeflow PyTorchJob; not read");
  }
  if (gathered.volcano && !gathered.volcano->own_task_error.ok()) {
    topology.notes.push_back("Volcano task of this pod unknown: " +
                             gathered.volcano->own_task_error.message());
  }
  topology.local_gpu_models = in.local_gpu_models;
  LogOverrides(topology);
  return topology;
}

}  // namespace hetrun

// `hetrun env [--json] [topology flags]`: the job's topology as hetrun resolves it from flags,
// HETRUN_* variables and what Volcano, Kubeflow, MPI or Slurm inject, with the source of every
// field and every value that a higher-precedence one overrode (docs/ARCHITECTURE.md §4.1, §4.5).
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/base/exit_code.h"
#include "preflight/topology_inputs.h"

namespace hetrun::launcher {
namespace {

std::string JoinInts(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

nlohmann::json ToJson(const Topology& t) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const TaskInfo& task : t.tasks) {
    tasks.push_back({{"name", task.name}, {"replicas", task.replicas}, {"hosts", task.hosts}});
  }
  nlohmann::json sources = {{"nnodes", t.nnodes.source},
                            {"node_rank", t.node_rank.source},
                            {"nproc_per_node", t.nproc_per_node.source},
                            {"master_addr", t.master_addr.source},
                            {"master_port", t.master_port.source}};
  if (t.task) sources["task"] = t.task->source;
  if (t.task_index) sources["task_index"] = t.task_index->source;
  if (t.incarnation) sources["incarnation"] = t.incarnation->source;
  nlohmann::json overrides = nlohmann::json::array();
  for (const Override& o : t.overrides) {
    overrides.push_back({{"field", o.field}, {"winner", o.winner}, {"overridden", o.overridden}});
  }
  return {
      {"source", t.source},
      {"nnodes", t.nnodes.value},
      {"node_rank", t.node_rank.value},
      {"nproc_per_node", t.nproc_per_node.value},
      {"world_size", t.world_size},
      {"local_world_size", t.local_world_size},
      {"ranks", t.ranks},
      {"local_ranks", t.local_ranks},
      {"master_addr", t.master_addr.value},
      {"master_port", t.master_port.value},
      {"per_process", t.per_process},
      {"task", t.task ? nlohmann::json(t.task->value) : nlohmann::json(nullptr)},
      {"task_index", t.task_index ? nlohmann::json(t.task_index->value) : nlohmann::json(nullptr)},
      {"incarnation",
       t.incarnation ? nlohmann::json(t.incarnation->value) : nlohmann::json(nullptr)},
      {"tasks", tasks},
      {"sources", sources},
      {"overrides", overrides},
      {"notes", t.notes},
      {"gpu_models", t.local_gpu_models}};
}

void PrintText(const Topology& t, std::ostream& out) {
  out << "source=" << t.source << "\n";
  out << "nnodes=" << t.nnodes.value << " (" << t.nnodes.source << ")\n";
  out << "node_rank=" << t.node_rank.value << " (" << t.node_rank.source << ")\n";
  out << "nproc_per_node=" << t.nproc_per_node.value << " (" << t.nproc_per_node.source << ")\n";
  out << "world_size=" << t.world_size
      << (t.per_process ? " (per-process launcher: its process count)"
                        : " (nnodes x nproc_per_node)")
      << "\n";
  out << "local_world_size=" << t.local_world_size << "\n";
  out << "ranks=" << JoinInts(t.ranks) << "\n";
  out << "local_ranks=" << JoinInts(t.local_ranks) << "\n";
  out << "master_addr=" << t.master_addr.value << " (" << t.master_addr.source << ")\n";
  out << "master_port=" << t.master_port.value << " (" << t.master_port.source << ")\n";
  if (t.task) out << "task=" << t.task->value << " (" << t.task->source << ")\n";
  if (t.task_index) {
    out << "task_index=" << t.task_index->value << " (" << t.task_index->source << ")\n";
  }
  if (t.incarnation) {
    out << "incarnation=" << t.incarnation->value << " (" << t.incarnation->source << ")\n";
  }
  for (size_t i = 0; i < t.tasks.size(); ++i) {
    const TaskInfo& task = t.tasks[i];
    out << "tasks[" << i << "]=" << task.name << " x" << task.replicas;
    if (!task.hosts.empty()) {
      out << " (";
      for (size_t h = 0; h < task.hosts.size(); ++h) out << (h ? "," : "") << task.hosts[h];
      out << ")";
    }
    out << "\n";
  }
  for (const Override& o : t.overrides) {
    out << "override: " << o.field << "=" << o.winner << " overrides " << o.overridden << "\n";
  }
  for (const std::string& note : t.notes) out << "note: " << note << "\n";
  if (!t.local_gpu_models.empty()) {
    out << "gpu_models=";
    for (size_t i = 0; i < t.local_gpu_models.size(); ++i) {
      out << (i ? "," : "") << (t.local_gpu_models[i].empty() ? "unknown" : t.local_gpu_models[i]);
    }
    out << "\n";
  }
}

}  // namespace

Result<int> commands::Env(const CommandContext& context) {
  cxxopts::Options options("hetrun env",
                           "Show the job topology resolved from flags, HETRUN_* and the launcher "
                           "environment (Volcano, Kubeflow, Open MPI, MPICH, Slurm), with the "
                           "source of every field.");
  options.add_options()("json", "print JSON (keys: docs/reference/cli/env.md)")("h,help",
                                                                                "this text");
  AddTopologyOptions(options);
  HETRUN_ASSIGN_OR_RETURN(std::optional<cxxopts::ParseResult> given,
                          ParseOptionsOnly(options, context.args, context.out, {"", "topology"}));
  if (!given) return kExitOk;  // --help
  const cxxopts::ParseResult& parsed = *given;
  TopologyOptionValues values = ReadTopologyOptions(parsed);
  HETRUN_ASSIGN_OR_RETURN(TopologyInputs inputs,
                          GatherTopologyInputs(context.env, values.flags, values.fake_gpus));
  HETRUN_ASSIGN_OR_RETURN(Topology topology, ResolveTopology(inputs));
  if (parsed.count("json")) {
    context.out << ToJson(topology).dump(2) << "\n";
  } else {
    PrintText(topology, context.out);
  }
  return kExitOk;
}

}  // namespace hetrun::launcher

// Per-process launchers (docs/ARCHITECTURE.md §4.1 level 3): mpirun (Open MPI), mpiexec (MPICH
// Hydra) and srun (Slurm) start one process per worker and tell each its rank.
//
// Node index: Slurm states it (SLURM_NODEID, SLURM_NNODES). Open MPI and MPICH do not: Open MPI's
// OMPI_COMM_WORLD_NODE_RANK is a process's rank among the processes on its node across all jobs,
// not which node it is on, so it is never read. For them the node index is derived as
// (RANK - LOCAL_RANK) / LOCAL_SIZE, which holds for mapping by slot (mpirun's and mpiexec's
// default: consecutive ranks fill a node) with the same number of processes on every node; the
// derivation is reported as a note, and any stated value (SLURM_NODEID, HETRUN_NODE_RANK,
// --node-rank) takes precedence over it.
#include <string>

#include "hetrun/base/units.h"
#include "job/topology_internal.h"

namespace hetrun::topology_internal {
namespace {

struct Convention {
  std::string_view name;
  std::string_view label;
  std::string_view rank_var;
  std::string_view size_var;
  std::string_view local_rank_var;
  std::string_view local_size_var;  ///< empty: not stated (Slurm)
};

constexpr Convention kOpenMpi = {"open-mpi",
                                 "Open MPI",
                                 "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE",
                                 "OMPI_COMM_WORLD_LOCAL_RANK",
                                 "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr Convention kMpich = {"mpich",    "MPICH",           "PMI_RANK",
                               "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};
constexpr Convention kSlurm = {"slurm",        "Slurm",         "SLURM_PROCID",
                               "SLURM_NTASKS", "SLURM_LOCALID", ""};

std::string Source(std::string_view var, std::string_view label) {
  return std::string(var) + ", " + std::string(label);
}

Result<int> Required(const Environment& env, const Convention& c, std::string_view var, int64_t min,
                     int64_t max) {
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> value,
                          ReadEnvInt(env, var, Source(var, c.label), min, max));
  if (!value) {
    return InvalidArgumentError(std::string(var) + " is not set (" + std::string(c.label) +
                                "), but " + std::string(c.rank_var) + "='" +
                                Shown(env.Get(c.rank_var).value_or("")) + "' is");
  }
  return *value;
}

Candidate<int> Make(int value, std::string source) {
  return Candidate<int>{value, std::move(source), kPerProcessLevel};
}

Status RankBelow(std::string_view rank_var, int rank, std::string_view size_var, int size,
                 std::string_view label) {
  if (rank < size) return Status::Ok();
  return BadValue(rank_var, std::to_string(rank), Source(rank_var, label),
                  "must be less than " + std::string(size_var) + "=" + std::to_string(size));
}

// Slurm states no per-node process count: SLURM_NTASKS_PER_NODE when it is a plain number, else
// SLURM_NTASKS / SLURM_NNODES when that divides evenly.
Result<Candidate<int>> SlurmLocalSize(const Environment& env, int size, std::optional<int> nnodes,
                                      int local_rank) {
  if (std::optional<std::string> per_node = env.Get("SLURM_NTASKS_PER_NODE")) {
    auto parsed = ParseIntInRange(*per_node, 1, kMaxProcPerNode);
    if (parsed.ok()) {
      if (local_rank >= *parsed) {
        return BadValue("SLURM_LOCALID", std::to_string(local_rank), "SLURM_LOCALID, Slurm",
                        "must be less than SLURM_NTASKS_PER_NODE=" + *per_node);
      }
      return Make(static_cast<int>(*parsed), "SLURM_NTASKS_PER_NODE, Slurm");
    }
  }
  if (nnodes && size % *nnodes == 0 && local_rank < size / *nnodes) {
    return Make(size / *nnodes, "SLURM_NTASKS / SLURM_NNODES, Slurm");
  }
  // Uneven allocation with no per-node count: the most this node can hold is what the
  // local rank proves; report it as derived.
  Candidate<int> derived{local_rank + 1,
                         "SLURM_LOCALID + 1, Slurm: lower bound, the allocation is uneven",
                         kDerivedLevel};
  return derived;
}

Result<std::optional<PerProcessInfo>> ReadOne(const Environment& env, const Convention& c) {
  if (!env.Get(c.rank_var)) return std::optional<PerProcessInfo>();
  PerProcessInfo info;
  info.convention = std::string(c.name);
  info.label = std::string(c.label);
  HETRUN_ASSIGN_OR_RETURN(int size, Required(env, c, c.size_var, 1, kMaxProcesses));
  HETRUN_ASSIGN_OR_RETURN(int rank, Required(env, c, c.rank_var, 0, kMaxProcesses));
  HETRUN_RETURN_IF_ERROR(RankBelow(c.rank_var, rank, c.size_var, size, c.label));
  HETRUN_ASSIGN_OR_RETURN(int local_rank,
                          Required(env, c, c.local_rank_var, 0, kMaxProcPerNode - 1));
  HETRUN_RETURN_IF_ERROR(RankBelow(c.local_rank_var, local_rank, c.size_var, size, c.label));
  info.rank = Make(rank, Source(c.rank_var, c.label));
  info.size = Make(size, Source(c.size_var, c.label));
  info.local_rank = Make(local_rank, Source(c.local_rank_var, c.label));

  if (!c.local_size_var.empty()) {
    HETRUN_ASSIGN_OR_RETURN(int local_size, Required(env, c, c.local_size_var, 1, kMaxProcPerNode));
    HETRUN_RETURN_IF_ERROR(
        RankBelow(c.local_rank_var, local_rank, c.local_size_var, local_size, c.label));
    if (local_size > size) {
      return BadValue(c.local_size_var, std::to_string(local_size),
                      Source(c.local_size_var, c.label),
                      "must not exceed " + std::string(c.size_var) + "=" + std::to_string(size));
    }
    info.local_size = Make(local_size, Source(c.local_size_var, c.label));
    // Not stated by the launcher: derived for by-slot mapping (see the file comment).
    int first_on_node = rank - local_rank;
    info.nnodes = Candidate<int>{(size + local_size - 1) / local_size,
                                 std::string(c.size_var) + " / " + std::string(c.local_size_var) +
                                     ", " + std::string(c.label) + ": derived, by-slot mapping",
                                 kDerivedLevel};
    info.node_rank =
        Candidate<int>{first_on_node / local_size,
                       "(" + std::string(c.rank_var) + " - " + std::string(c.local_rank_var) +
                           ") / " + std::string(c.local_size_var) + ", " + std::string(c.label) +
                           ": derived, by-slot mapping",
                       kDerivedLevel};
    info.note = std::string(c.label) +
                " states no node index (OMPI_COMM_WORLD_NODE_RANK is not one): node_rank "
                "derived as (rank - local rank) / local size, which assumes by-slot mapping "
                "with the same process count on every node; --node-rank overrides";
    return std::optional<PerProcessInfo>(std::move(info));
  }

  // Slurm states the node index and the node count.
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> nnodes,
                          ReadEnvInt(env, "SLURM_NNODES", "SLURM_NNODES, Slurm", 1, kMaxNodes));
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> node_id,
                          ReadEnvInt(env, "SLURM_NODEID", "SLURM_NODEID, Slurm", 0, kMaxNodes - 1));
  if (nnodes && node_id && *node_id >= *nnodes) {
    return BadValue("SLURM_NODEID", std::to_string(*node_id), "SLURM_NODEID, Slurm",
                    "must be less than SLURM_NNODES=" + std::to_string(*nnodes));
  }
  if (nnodes) info.nnodes = Make(*nnodes, "SLURM_NNODES, Slurm");
  if (node_id) info.node_rank = Make(*node_id, "SLURM_NODEID, Slurm");
  HETRUN_ASSIGN_OR_RETURN(info.local_size, SlurmLocalSize(env, size, nnodes, local_rank));
  return std::optional<PerProcessInfo>(std::move(info));
}

}  // namespace

bool HasPerProcessLauncher(const Environment& env) {
  for (const Convention* c : {&kOpenMpi, &kMpich, &kSlurm}) {
    if (env.Get(c->rank_var)) return true;
  }
  return false;
}

Result<std::vector<PerProcessInfo>> ReadPerProcessLaunchers(const Environment& env) {
  std::vector<PerProcessInfo> found;
  for (const Convention* c : {&kOpenMpi, &kMpich, &kSlurm}) {
    HETRUN_ASSIGN_OR_RETURN(std::optional<PerProcessInfo> info, ReadOne(env, *c));
    if (info) found.push_back(std::move(*info));
  }
  return found;
}

}  // namespace hetrun::topology_internal

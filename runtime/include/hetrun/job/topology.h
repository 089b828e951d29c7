// The job's shape, resolved from flags, HETRUN_* variables, and what Volcano, Kubeflow, MPI,
// Slurm or JobSet inject (docs/ARCHITECTURE.md §4.1). A pure function of its inputs: no globals, no
// getenv.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

/// One Volcano task (svc/env plugins), in rank/stage order.
struct TaskInfo {
  std::string name;                ///< "heavy-stage-workers"
  int replicas = 0;                ///< pods of this task
  std::vector<std::string> hosts;  ///< their host names (may be empty when unknown)
};

/// A value and where it came from: "--nnodes flag", "WORLD_SIZE, Volcano pytorch plugin: counts
/// pods", "default: single node".
template <typename T>
struct Sourced {
  T value{};
  std::string source;
};

/// A lower-precedence value that a higher one replaced (shown by `hetrun env`, logged).
struct Override {
  std::string field;       ///< "node_rank"
  std::string winner;      ///< "7 (OMPI_COMM_WORLD_RANK, Open MPI)"
  std::string overridden;  ///< "0 (SLURM_PROCID, Slurm)"
};

struct Topology {
  std::string source;           ///< the convention that set the shape ("volcano-pytorch", ...)
  Sourced<int> nnodes;          ///< nodes (pods) in the job
  Sourced<int> node_rank;       ///< this node's index
  Sourced<int> nproc_per_node;  ///< workers per node (1 under per-process launchers)
  Sourced<std::string> master_addr;
  Sourced<int> master_port;
  int world_size = 0;  ///< total workers: nnodes * nproc_per_node, or the launcher's process count
                       ///< under a per-process launcher (OMPI_COMM_WORLD_SIZE, SLURM_NTASKS, ...)
  int local_world_size = 0;                  ///< workers on this node (LOCAL_WORLD_SIZE)
  std::vector<int> ranks;                    ///< global ranks of this node's workers
  std::vector<int> local_ranks;              ///< their local ranks
  bool per_process = false;                  ///< this process is itself one worker (mpirun, srun)
  std::optional<Sourced<std::string>> task;  ///< Volcano task of this pod
  std::optional<Sourced<int>> task_index;    ///< index of this pod within its task
  std::vector<TaskInfo> tasks;               ///< Volcano tasks (or JobSet replicated jobs) in order
  /// The job's incarnation: how often it was restarted as a whole (JobSet's restart attempt).
  std::optional<Sourced<int>> incarnation;
  std::vector<Override> overrides;
  std::vector<std::string> notes;  ///< assumptions worth showing (e.g. how a node rank was derived)
  /// The model of each local GPU (gpu_model.h; "" where unknown); empty when not read.
  std::vector<std::string> local_gpu_models;
};

/// Command-line values; unset fields fall back to the environment.
struct TopologyFlags {
  std::optional<std::string> nnodes;
  std::optional<std::string> node_rank;
  std::optional<std::string> nproc_per_node;  ///< a number or "auto"
  std::optional<std::string> master_addr;
  std::optional<std::string> master_port;
};

/// Everything the resolution reads, passed in so tests enumerate cases.
struct TopologyInputs {
  Environment env;
  TopologyFlags flags;
  std::string hostname;     ///< this pod's host name (gethostname)
  int local_gpu_count = 0;  ///< for nproc_per_node=auto (real or fake inventory)
  std::vector<std::string>
      local_gpu_models;  ///< each local GPU's model, when the inventory was read
  /// Contents of the Volcano host files (<dir>/<file>.host, one host per line), keyed by the file
  /// name without ".host" (the task name with '-' replaced by '_', as the svc plugin writes it);
  /// read by the caller from HETRUN_VOLCANO_HOST_DIR (default /etc/volcano).
  std::map<std::string, std::string> volcano_host_files;
};

/// True when resolving needs `local_gpu_count`: workers per node is "auto"/"gpu" or not given at
/// all (the default is one worker per local GPU), and no per-process launcher is present.
bool NeedsLocalGpuCount(const Environment& env, const TopologyFlags& flags);

/// Resolves the topology. Invalid or inconsistent input is an InvalidArgument error naming the
/// variable, its value and its source; nothing is guessed silently. A bad flag value is a Usage
/// error. Every override is listed in Topology::overrides and logged at info level.
Result<Topology> ResolveTopology(const TopologyInputs& inputs);

}  // namespace hetrun

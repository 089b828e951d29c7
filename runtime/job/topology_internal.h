// Internal pieces of ResolveTopology (runtime/job/topology.cc): reading one convention at a time
// into candidate values that carry their precedence level and source. Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/base/units.h"
#include "hetrun/job/topology.h"

namespace hetrun::topology_internal {

/// Precedence levels of docs/ARCHITECTURE.md §4.1, highest first. kDerived sits below every
/// convention: values a convention does not state but that follow from an assumption.
enum Level : int {
  kFlagLevel = 1,
  kHetrunLevel = 2,
  kPerProcessLevel = 3,
  kKubeflowLevel = 4,
  kVolcanoPytorchLevel = 5,
  kVolcanoSvcLevel = 6,
  kJobSetLevel = 7,
  kDerivedLevel = 8,
  kDefaultLevel = 9,
};

/// One value a convention offers for a field.
template <typename T>
struct Candidate {
  T value{};
  std::string source;  ///< "WORLD_SIZE, Volcano pytorch plugin: counts pods"
  int level = kDefaultLevel;
};

/// Largest accepted values: far above any real job, low enough that products never overflow.
inline constexpr int64_t kMaxNodes = 100'000;
inline constexpr int64_t kMaxProcesses = 10'000'000;
inline constexpr int64_t kMaxProcPerNode = 4096;

/// Printable and short: control and non-ASCII bytes become '?', long values are cut at 80.
std::string Shown(std::string_view text);

/// "NAME='VALUE' (SOURCE): WHY" as an InvalidArgument error (a Usage error for flags).
Status BadValue(std::string_view name, std::string_view value, std::string_view source,
                std::string_view why, StatusCode code = StatusCode::kInvalidArgument);

/// The integer in `name` (unset: nullopt), in [min, max]; errors name the variable and `source`.
Result<std::optional<int>> ReadEnvInt(const Environment& env, std::string_view name,
                                      std::string_view source, int64_t min, int64_t max);

/// A host name or address: not empty, no spaces or control characters.
Status CheckHost(std::string_view name, std::string_view value, std::string_view source,
                 StatusCode code = StatusCode::kInvalidArgument);

// --- per-process launchers (per_process_launchers.cc) ---

/// What one per-process launcher (Open MPI, MPICH, Slurm) says about this process.
struct PerProcessInfo {
  std::string convention;  ///< "open-mpi", "mpich", "slurm"
  std::string label;       ///< "Open MPI"
  Candidate<int> rank;
  Candidate<int> size;
  Candidate<int> local_rank;
  Candidate<int> local_size;
  std::optional<Candidate<int>> nnodes;     ///< physical nodes, when stated or derived
  std::optional<Candidate<int>> node_rank;  ///< physical node index, when stated or derived
  std::string note;                         ///< the assumption behind a derived value
};

/// Every per-process launcher present, innermost first (Open MPI, MPICH, then Slurm: mpirun or
/// mpiexec inside a Slurm allocation sets its own variables on top of Slurm's).
Result<std::vector<PerProcessInfo>> ReadPerProcessLaunchers(const Environment& env);

/// True when any per-process launcher's rank variable is set.
bool HasPerProcessLauncher(const Environment& env);

// --- Volcano svc/env plugins (volcano_tasks.cc) ---

struct VolcanoJob {
  std::vector<TaskInfo> tasks;  ///< in rank/stage order
  std::string tasks_source;     ///< "VC_<TASK>_NUM/HOSTS, Volcano svc plugin" or the files
  std::string order_source;     ///< "HETRUN_TASK_ORDER" or "default: master first, then by name"
  std::optional<Sourced<std::string>> task;  ///< this pod's task
  std::optional<Sourced<int>> task_index;    ///< this pod's index in its task
  std::optional<Candidate<int>> nnodes;
  std::optional<Candidate<int>> node_rank;
  std::optional<Candidate<std::string>> master_addr;
  /// Why this pod's task or index is unknown; an error only when nothing of higher precedence
  /// gives the node rank.
  Status own_task_error;
};

/// The Volcano job from VC_<TASK>_NUM / VC_<TASK>_HOSTS (or the host files when no such
/// variable is set); nullopt when neither is present.
Result<std::optional<VolcanoJob>> ReadVolcanoJob(const TopologyInputs& inputs);

// --- JobSet (jobset_pods.cc) ---

/// What a JobSet pod's environment says (the HETRUN_JOBSET_* variables that `hetrun plan --emit
/// jobset` fills from JobSet's pod labels through the downward API, JOB_COMPLETION_INDEX).
struct JobSetPod {
  std::vector<TaskInfo> tasks;               ///< replicated jobs in HETRUN_TASK_ORDER's order
  std::optional<Sourced<std::string>> task;  ///< this pod's replicated job
  std::optional<Sourced<int>> task_index;    ///< its Job index
  std::optional<Candidate<int>> nnodes;
  std::optional<Candidate<int>> node_rank;
  std::optional<Candidate<std::string>> master_addr;
  std::optional<Sourced<int>> incarnation;  ///< the JobSet's restart attempt
};

/// True when any HETRUN_JOBSET_* variable is set and not empty.
bool HasJobSet(const Environment& env);

/// The JobSet pod's topology; nullopt when no HETRUN_JOBSET_* variable is set. Inconsistent
/// values (a global index that is not the task's offset plus its job index, an index past the
/// replicas, a second pod in a Job) are InvalidArgument errors naming the variables.
Result<std::optional<JobSetPod>> ReadJobSetPod(const Environment& env);

}  // namespace hetrun::topology_internal

// The environment of one worker (docs/ARCHITECTURE.md §4.2): what it inherits from hetrun plus the
// torchrun-compatible variables, computed from a resolved Topology. A pure function.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/job/inventory.h"
#include "hetrun/job/topology.h"

namespace hetrun::launcher {

struct WorkerEnvOptions {
  int restart_count = 0;        ///< TORCHELASTIC_RESTART_COUNT
  int max_restarts = 0;         ///< TORCHELASTIC_MAX_RESTARTS
  std::string run_id = "none";  ///< TORCHELASTIC_RUN_ID (torchrun's default for static runs)
  const Inventory* inventory = nullptr;  ///< the node's GPUs (real or fake); null = unknown
  std::string role = "default";          ///< ROLE_NAME (--role); one role per job
  /// TORCHELASTIC_SIGNALS_TO_HANDLE (--signals-to-handle), torchrun's default.
  std::string signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  /// Without an inventory: each local GPU's family as NVML reported it (nvml_families.h), used
  /// for HETRUN_GPU_FAMILY when the job did not set it and FamilyOfLocalRank can tell.
  std::vector<std::string> nvml_families = {};
  /// Likewise each local GPU's model from NVML, for HETRUN_GPU_MODEL ("" entries: unknown).
  std::vector<std::string> nvml_models = {};
};

/// The whole environment of the worker at `local_index` (an index into topology.ranks /
/// topology.local_ranks): `base` (hetrun's own environment) with RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_NAME, ROLE_RANK (= RANK: one role),
/// ROLE_WORLD_SIZE (= WORLD_SIZE), MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE
/// (False: hetrun hosts no store for the workers; init_process_group("env://") creates its own
/// on MASTER_ADDR:MASTER_PORT either way), TORCHELASTIC_RESTART_COUNT,
/// TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, TORCHELASTIC_SIGNALS_TO_HANDLE, and
/// TORCH_NCCL_ASYNC_ERROR_HANDLING=1 unless the user set it (torchrun's values), OMP_NUM_THREADS=1
/// when more than one worker runs on the node and the user did not set it (like torchrun), and
/// HETRUN_GPU_FAMILY when the inventory has a GPU for this local rank (without an inventory the
/// job's own value, if any, passes through unchanged; else NVML's family of this rank's GPU when
/// known), and HETRUN_GPU_MODEL by the same rule from the GPU's model (gpu_model.h; NVML's
/// model without an inventory). TORCHELASTIC_ERROR_FILE
/// and HETRUN_RUN_DIR come from the supervisor (the run folder).
std::map<std::string, std::string> WorkerEnvironment(const Environment& base,
                                                     const Topology& topology, size_t local_index,
                                                     const WorkerEnvOptions& options);

}  // namespace hetrun::launcher

#include "supervise/worker_env.h"

#include "preflight/nvml_families.h"

namespace hetrun::launcher {

std::map<std::string, std::string> WorkerEnvironment(const Environment& base,
                                                     const Topology& topology, size_t local_index,
                                                     const WorkerEnvOptions& options) {
  std::map<std::string, std::string> env = base.all();
  int local_rank = topology.local_ranks.at(local_index);
  int local_world_size = topology.local_world_size > 0 ? topology.local_world_size
                                                       : static_cast<int>(topology.ranks.size());
  env["RANK"] = std::to_string(topology.ranks.at(local_index));
  env["WORLD_SIZE"] = std::to_string(topology.world_size);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(local_world_size);
  env["GROUP_RANK"] = std::to_string(topology.node_rank.value);
  env["GROUP_WORLD_SIZE"] = std::to_string(topology.nnodes.value);
  env["ROLE_NAME"] = options.role;
  env["ROLE_RANK"] = env["RANK"];
  env["ROLE_WORLD_SIZE"] = env["WORLD_SIZE"];
  env["MASTER_ADDR"] = topology.master_addr.value;
  env["MASTER_PORT"] = std::to_string(topology.master_port.value);
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(options.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(options.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = options.run_id;
  env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = options.signals_to_handle;
  if (!env.contains("TORCH_NCCL_ASYNC_ERROR_HANDLING"))
    env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1";
  if (local_world_size > 1 && !env.contains("OMP_NUM_THREADS")) env["OMP_NUM_THREADS"] = "1";
  // Worker local rank r uses the node's GPU r (the CUDA device order of the inventory). Without
  // an inventory (real GPUs not probed), a family the job set (its manifest) is kept.
  if (options.inventory != nullptr && local_rank >= 0 &&
      static_cast<size_t>(local_rank) < options.inventory->gpus.size()) {
    const GpuInfo& gpu = options.inventory->gpus[static_cast<size_t>(local_rank)];
    env["HETRUN_GPU_FAMILY"] = gpu.family;
    env["HETRUN_GPU_MODEL"] = gpu.model;
    if (gpu.model.empty()) env.erase("HETRUN_GPU_MODEL");
  } else if (options.inventory != nullptr) {
    env.erase("HETRUN_GPU_FAMILY");  // the inventory is authoritative: this rank has no GPU in it
    env.erase("HETRUN_GPU_MODEL");
  } else {
    if (!env.contains("HETRUN_GPU_FAMILY")) {
      if (auto family = FamilyOfLocalRank(options.nvml_families, base, local_rank)) {
        env["HETRUN_GPU_FAMILY"] = *family;
      }
    }
    if (!env.contains("HETRUN_GPU_MODEL")) {
      auto model = FamilyOfLocalRank(options.nvml_models, base, local_rank);
      if (model && !model->empty()) env["HETRUN_GPU_MODEL"] = *model;
    }
  }
  return env;
}

}  // namespace hetrun::launcher

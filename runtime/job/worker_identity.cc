#include "hetrun/job/worker_identity.h"

#include <optional>

#include "hetrun/base/units.h"

namespace hetrun {
namespace {

/// The integer value of `name` in [min, max], or nullopt when unset.
Result<std::optional<int64_t>> IntVar(const Environment& env, std::string_view name, int64_t min,
                                      int64_t max) {
  std::optional<std::string> text = env.Get(name);
  if (!text) return std::optional<int64_t>();
  Result<int64_t> value = ParseIntInRange(*text, min, max);
  if (!value.ok()) return value.status().WithContext(std::string(name) + "=" + *text);
  return std::optional<int64_t>(*value);
}

Status RankInWorld(const WorkerIdentity& id, std::string_view rank_var, std::string_view size_var) {
  if (id.rank >= id.world_size) {
    return InvalidArgumentError(std::string(rank_var) + "=" + std::to_string(id.rank) +
                                " is not below " + std::string(size_var) + "=" +
                                std::to_string(id.world_size));
  }
  if (id.local_rank >= id.local_world_size) {
    return InvalidArgumentError(
        "local rank " + std::to_string(id.local_rank) + " is not below the local world size " +
        std::to_string(id.local_world_size) + " (" + std::string(rank_var) + " source)");
  }
  return Status::Ok();
}

Status ReadMaster(const Environment& env, bool required, WorkerIdentity* id) {
  std::optional<std::string> addr = env.Get("MASTER_ADDR");
  HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> port, IntVar(env, "MASTER_PORT", 1, 65535));
  if (required && (!addr || addr->empty() || !port)) {
    return InvalidArgumentError(
        "WORLD_SIZE=" + std::to_string(id->world_size) +
        " needs MASTER_ADDR and MASTER_PORT (the address of the job's TCPStore), as "
        "torch.distributed's env:// does");
  }
  if (addr && !addr->empty()) id->master_addr = *addr;
  if (port) id->master_port = static_cast<int>(*port);
  return Status::Ok();
}

}  // namespace

Result<WorkerIdentity> ReadWorkerIdentity(const Environment& env) {
  constexpr int64_t kMaxWorld = 1 << 20;
  WorkerIdentity id;
  HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> rank, IntVar(env, "RANK", 0, kMaxWorld));
  HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> world, IntVar(env, "WORLD_SIZE", 1, kMaxWorld));
  if (rank.has_value() != world.has_value()) {
    return InvalidArgumentError(std::string(rank ? "RANK is set but WORLD_SIZE is not"
                                                 : "WORLD_SIZE is set but RANK is not"));
  }
  if (rank) {
    id.rank = static_cast<int>(*rank);
    id.world_size = static_cast<int>(*world);
    id.source = "RANK/WORLD_SIZE";
    HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> local_rank,
                            IntVar(env, "LOCAL_RANK", 0, kMaxWorld));
    HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> local_world,
                            IntVar(env, "LOCAL_WORLD_SIZE", 1, kMaxWorld));
    id.local_rank = static_cast<int>(local_rank.value_or(0));
    id.local_world_size = static_cast<int>(local_world.value_or(id.local_rank + 1));
    HETRUN_RETURN_IF_ERROR(RankInWorld(id, "RANK", "WORLD_SIZE"));
    HETRUN_RETURN_IF_ERROR(ReadMaster(env, id.world_size > 1, &id));
  } else {
    struct MpiNames {
      std::string_view source, rank, size, local_rank, local_size;
    };
    constexpr MpiNames kMpi[] = {
        {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    };
    for (const MpiNames& names : kMpi) {
      HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> mpi_rank,
                              IntVar(env, names.rank, 0, kMaxWorld));
      HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> mpi_size,
                              IntVar(env, names.size, 1, kMaxWorld));
      if (!mpi_rank && !mpi_size) continue;
      if (!mpi_rank || !mpi_size) {
        return InvalidArgumentError(
            std::string(names.source) + ": " + std::string(mpi_rank ? names.size : names.rank) +
            " is not set while " + std::string(mpi_rank ? names.rank : names.size) + " is");
      }
      HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> local_rank,
                              IntVar(env, names.local_rank, 0, kMaxWorld));
      HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> local_size,
                              IntVar(env, names.local_size, 1, kMaxWorld));
      id.rank = static_cast<int>(*mpi_rank);
      id.world_size = static_cast<int>(*mpi_size);
      id.local_rank = static_cast<int>(local_rank.value_or(0));
      id.local_world_size = static_cast<int>(local_size.value_or(id.local_rank + 1));
      id.source = std::string(names.source);
      HETRUN_RETURN_IF_ERROR(RankInWorld(id, names.rank, names.size));
      HETRUN_RETURN_IF_ERROR(ReadMaster(env, /*required=*/false, &id));
      break;
    }
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<bool> agent_store,
                          env.GetBool("TORCHELASTIC_USE_AGENT_STORE"));
  id.launcher_hosts_store = agent_store.value_or(false);
  HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> restarts,
                          IntVar(env, "TORCHELASTIC_RESTART_COUNT", 0, kMaxWorld));
  id.restart_count = static_cast<int>(restarts.value_or(0));
  return id;
}

}  // namespace hetrun

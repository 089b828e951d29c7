// Who this worker is, read from its environment (docs/ARCHITECTURE.md §4.2 and §4.1 level 3): what
// a trainer needs to join the job's process group. Works under `hetrun run`, torchrun and mpirun.
#pragma once

#include <cstdint>
#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

/// Port a worker uses for the job's TCPStore when the launcher names none (mpirun, MPICH):
/// torchrun's and torch.distributed's default.
inline constexpr int kDefaultStorePort = 29500;

struct WorkerIdentity {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = kDefaultStorePort;
  /// True when the launcher hosts the TCPStore (TORCHELASTIC_USE_AGENT_STORE=True): every
  /// worker is a client. Otherwise rank 0 hosts it, as torch.distributed's env:// does.
  bool launcher_hosts_store = false;
  int restart_count = 0;  ///< TORCHELASTIC_RESTART_COUNT: keys of each attempt are kept apart
  /// Where rank and world came from: "RANK/WORLD_SIZE" (hetrun run, torchrun), "Open MPI",
  /// "MPICH", or "single process" (nothing set).
  std::string source = "single process";
};

/// Reads, by precedence: RANK + WORLD_SIZE (with LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
/// MASTER_PORT required when WORLD_SIZE > 1, like env://); else OMPI_COMM_WORLD_*; else
/// PMI_RANK/PMI_SIZE (MPICH); else a single process. Under MPI, MASTER_ADDR/MASTER_PORT default
/// to 127.0.0.1 and kDefaultStorePort. Errors name the variable and its value.
Result<WorkerIdentity> ReadWorkerIdentity(const Environment& env);

}  // namespace hetrun

// The checks `hetrun run` makes before any training code runs (docs/ARCHITECTURE.md §2.2),
// job-wide:
//   1. the local GPUs (declared, or probed in a child: CUDA is never initialised here);
//   2. the rendezvous with the other launchers when the job has more than one (libtorch's
//      TCPStore, dlopened), which gives every node every node's record;
//   3. the kernel-image check (`hetrun check` logic, --scan/--torch/--arch-list) for every GPU
//      capability present in the job: any failure -> every node exits 80 with the same table;
//   4. the memory ceiling: min over every GPU of the job - reserve (exit 81 below --min-memory or
//      when a GPU's free memory is short), and what each worker gets from it.
#pragma once

#include <chrono>
#include <cxxopts.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/job/inventory.h"
#include "hetrun/job/node_record.h"
#include "hetrun/job/topology.h"
#include "hetrun/memory/memory_ceiling.h"
#include "rendezvous/job_rendezvous.h"

namespace hetrun::launcher {

struct PreflightOptions {
  std::chrono::milliseconds rdzv_timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(15)};
  memory::CeilingOptions ceiling;
  // Kernel-image check (same meaning as in `hetrun check`); off when nothing is given.
  std::vector<std::string> scan_paths;
  bool scan_torch = false;
  std::string torch_lib;
  std::optional<std::string> arch_list;
  bool strict = false;
  /// The run id: part of what the job secret's HMAC covers (records of another job never pass).
  std::string job_id = "none";
  /// Node 0's layout state (hetrun/pipeline/layout_state.h), sent in its record: path and text
  /// ("" when none).
  std::string layout_state_path;
  std::string layout_state;
  /// The interpreter asked where torch is when the rendezvous plugin's torch is not in the folder
  /// it records (--python, HETRUN_PYTHON, else preflight/default_python.h).
  std::string python = "python3";
  /// --check-collectives: sent in this node's record and compared like the job's size (a node
  /// without it would never join the others' probes).
  bool check_collectives = false;
  /// Polled by every wait (store connect, rendezvous): a shutdown signal's number ends it.
  InterruptFn interrupted;
  /// --dry-run: this node's checks as for a one-node job, no rendezvous (the ceiling is this
  /// node's; a run's is the minimum over every node's).
  bool local_only = false;
};

/// Adds the "preflight" option group: --rdzv-timeout --peer-timeout --memory-reserve
/// --memory-baseline --min-memory --scan --torch --torch-lib --arch-list --strict.
void AddPreflightOptions(cxxopts::Options& options);

/// Reads them back (flags, else HETRUN_RDZV_TIMEOUT / HETRUN_MEMORY_RESERVE / HETRUN_MIN_MEMORY /
/// HETRUN_MEMORY_BASELINE). Bad values are usage errors naming the flag.
Result<PreflightOptions> ReadPreflightOptions(const cxxopts::ParseResult& parsed,
                                              const Environment& env);

/// Who meets whom: one member per launcher. Normally a node (nnodes, node rank); under a
/// per-process launcher (mpirun, srun) every process is a launcher (world size, global rank).
struct Membership {
  int members = 1;
  int member = 0;
};
Membership MembershipOf(const Topology& topology);

struct PreflightResult {
  std::vector<NodeRecord> records;            ///< every launcher's record, by member rank
  std::optional<memory::Ceiling> ceiling;     ///< nullopt for a job without GPUs
  std::string arch_table;                     ///< the job-wide kernel-image table ("" when off)
  std::unique_ptr<JobRendezvous> rendezvous;  ///< when members > 1: keep alive while workers run
  Inventory inventory;                        ///< this node's GPUs
  std::string torch_version;                  ///< decides per_process_memory_fraction

  /// What hetrun adds to the worker with local rank `local_rank` on top of WorkerEnvironment:
  /// HETRUN_MEMORY_CEILING_BYTES; per_process_memory_fraction merged into PYTORCH_ALLOC_CONF (or
  /// PYTORCH_CUDA_ALLOC_CONF when the user set that one) for a torch that supports it;
  /// TORCHELASTIC_USE_AGENT_STORE=True when this job's launchers host the store.
  Result<std::map<std::string, std::string>> WorkerAdditions(const Environment& env,
                                                             int local_rank) const;
};

/// Runs the whole preflight. `declared` is the inventory from --fake-gpus / HETRUN_FAKE_GPUS when
/// given; otherwise the GPUs are probed in a child process.
Result<PreflightResult> RunPreflight(const Topology& topology,
                                     const std::optional<Inventory>& declared,
                                     const PreflightOptions& options, const Environment& env);

}  // namespace hetrun::launcher

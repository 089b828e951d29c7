// What each launcher publishes at the job-wide rendezvous, and the checks that every launcher
// runs on the same set of records (so every node reaches the same verdict and exit code).
// Pure: JSON in and out, no network.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/job/inventory.h"
#include "hetrun/memory/memory_ceiling.h"

namespace hetrun {

/// One row of a node's kernel-image check: can `file` run on `target`?
struct ArchRow {
  std::string target;   ///< "8.0"
  std::string file;     ///< path in the node's image
  std::string verdict;  ///< sass, ptx-jit, partial, missing, none (as `hetrun check`)
  bool fails = false;   ///< the check counts this row as a failure
};

struct NodeRecord {
  std::string hostname;
  int node_rank = 0;
  int nnodes = 0;
  int world_size = 0;        ///< total workers as this node resolved it
  int local_world_size = 0;  ///< workers on this node
  std::string task;          ///< Volcano task ("" when none)
  std::string
      instance;  ///< unique per launcher process (host, pid, random): tells duplicates apart
  std::string hetrun_version;
  std::string nccl_version;  ///< "2.28.9"; "" when unknown (then not compared)
  std::string inventory_source;
  std::vector<GpuInfo> gpus;
  bool arch_checked = false;  ///< this node checks its image's kernels
  /// --check-collectives: a job-wide setting (every node's probes join one group), compared.
  bool check_collectives = false;
  std::vector<ArchRow> arch_rows;  ///< its verdicts for its own GPUs' capabilities
  // Pipeline (hetrun/pipeline/node_layout.h): this pod's stage entry, -1 when it has none.
  int stage = -1;                 ///< HETRUN_STAGE (the pod's entry)
  int64_t stage_first_layer = 0;  ///< HETRUN_STAGE_LAYERS FIRST
  int64_t stage_layers = 0;       ///< HETRUN_STAGE_LAYERS COUNT
  int64_t micro_batches = 0;      ///< HETRUN_MICRO_BATCHES (M), 0 when the pod sets none
  std::vector<int> ranks;         ///< its workers' global ranks
  // Node 0 only (hetrun/pipeline/layout_state.h): the layout state it read, so every node
  // resumes from the same split; "" when none.
  std::string layout_state_path;
  std::string layout_state;  ///< the file's text
};

/// "node 1 (host-b)"
std::string NodeLabel(const NodeRecord& record);

/// Versioned JSON ({"schema": 1, ...}); Decode accepts extra keys and names what is wrong.
std::string EncodeNodeRecord(const NodeRecord& record);
Result<NodeRecord> DecodeNodeRecord(std::string_view json);

std::string EncodeArchRows(const std::vector<ArchRow>& rows);
Result<std::vector<ArchRow>> DecodeArchRows(std::string_view json);

/// The checks a joining node runs against the first node that joined: same nnodes, same world
/// size, same hetrun and NCCL versions. kInvalidArgument (exit 78) naming both nodes.
Status CheckSameJob(const NodeRecord& first, const NodeRecord& joining);

/// The checks on the complete set (any order): node ranks 0..nnodes-1 each exactly once,
/// CheckSameJob between every node and node 0, and the local world sizes add up to the world
/// size. kInvalidArgument (exit 78) naming the nodes involved.
Status ValidateJob(std::span<const NodeRecord> records);

/// Every GPU of the job, node by node, for the memory ceiling.
std::vector<memory::JobGpu> JobGpus(std::span<const NodeRecord> records);

/// Compute capabilities present in the job ("8.0", "9.0"), sorted numerically.
std::vector<std::string> JobCapabilities(std::span<const NodeRecord> records);

}  // namespace hetrun

// The runtime a C++ libtorch trainer links (docs/ARCHITECTURE.md §2.5): who this worker is, the
// job's c10d process groups (NCCL on GPU, Gloo on CPU), the allocator memory cap and the heartbeat.
//
//   hetrun::Environment env = hetrun::Environment::FromProcess();
//   auto rt = hetrun::Runtime::FromEnv(env);            // joins the job's TCPStore
//   if (!rt.ok()) { ...rt.status().ToString()... }
//   (*rt)->data_parallel_group()  // all-reduce gradients here (exact_gradients.h)
//
// Works under `hetrun run`, torchrun (RANK/WORLD_SIZE/MASTER_*) and mpirun (OMPI_COMM_WORLD_*,
// MASTER_ADDR/PORT defaulting to 127.0.0.1:29500); see worker_identity.h. The store is the
// launcher's when TORCHELASTIC_USE_AGENT_STORE=True, else rank 0 hosts it, as torch does.
// Every call returns a Status: no exception leaves the library.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/job/emulated_slowdown.h"
#include "hetrun/job/group_layout.h"
#include "hetrun/job/worker_identity.h"

namespace hetrun {

struct RuntimeOptions {
  /// Store connection and collective timeout (c10d's named timeout).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /// Force the CPU path (Gloo, steady clock) even when CUDA is available.
  bool force_cpu = false;
};

class Runtime {
 public:
  /// Reads the worker environment, joins the store, creates the world backend and one backend per
  /// data-parallel group of the plan (group_layout.h). kInvalidArgument for a bad environment,
  /// kUnavailable when the store or a peer cannot be reached within the timeout.
  static Result<std::unique_ptr<Runtime>> FromEnv(const Environment& env,
                                                  const RuntimeOptions& options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const WorkerIdentity& identity() const { return identity_; }
  int rank() const { return identity_.rank; }
  int world_size() const { return identity_.world_size; }
  /// Where tensors live: cuda:LOCAL_RANK on GPU, cpu otherwise.
  torch::Device device() const { return device_; }
  bool on_gpu() const { return device_.is_cuda(); }
  /// "nccl" or "gloo".
  const std::string& backend_name() const { return backend_name_; }

  const GroupLayout& layout() const { return layout_; }
  /// Every rank.
  c10d::Backend& world() const { return *world_; }
  /// This rank's data-parallel group (its stage's replicas), its rank in it, and its members.
  c10d::Backend& data_parallel_group() const { return *data_parallel_; }
  int data_parallel_rank() const { return data_parallel_rank_; }
  const std::vector<int>& data_parallel_ranks() const;
  int stage() const { return stage_; }

  /// All-gathers `mine` (the same byte count on every rank) over `group`: the result holds every
  /// member's bytes in group-rank order, bit-identical on every member. On GPU a small device
  /// tensor over NCCL, on CPU a host tensor over Gloo.
  Result<std::vector<std::byte>> AllGatherBytes(c10d::Backend& group,
                                                std::span<const std::byte> mine) const;

  /// Caps the CUDA caching allocator at HETRUN_MEMORY_CEILING_BYTES (a fraction of this GPU's
  /// memory, c10::cuda::CUDACachingAllocator::setMemoryFraction). On CPU, or without the
  /// variable, logs that it does not apply. kResourceExhausted when the ceiling exceeds the GPU.
  Status ApplyMemoryCeiling(const Environment& env) const;

  /// One heartbeat for `hetrun run --hang-timeout` (heartbeat.h); a no-op without HETRUN_HEARTBEAT.
  Status Heartbeat() const;

  /// The emulated slowdown of this worker at step 0 (emulated_slowdown.h); 1.0 on GPU.
  double emulated_slowdown() const { return slowdown_; }
  /// Its whole schedule (`@stepS` entries included); a constant 1 on GPU.
  const EmulatedSlowdown& emulated_slowdown_schedule() const { return schedule_; }
  /// The factor of 0-based step `step` (steps as the tuner counts them); 1.0 on GPU.
  double emulated_slowdown_at(int64_t step) const { return on_gpu() ? 1.0 : schedule_.At(step); }

  /// Waits until every rank reaches this point (world backend).
  Status Barrier() const;

  /// The store and collective timeout (RuntimeOptions::timeout): how long a wait on a peer may
  /// last before it fails.
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  Runtime() = default;

  Environment env_;
  WorkerIdentity identity_;
  GroupLayout layout_;
  torch::Device device_{torch::kCPU};
  std::string backend_name_;
  std::chrono::milliseconds timeout_{};
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> world_;
  c10::intrusive_ptr<c10d::Backend> data_parallel_;
  int data_parallel_rank_ = 0;
  int stage_ = 0;
  double slowdown_ = 1.0;
  EmulatedSlowdown schedule_;
};

}  // namespace hetrun

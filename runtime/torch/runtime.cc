#include "hetrun/runtime.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>

#include <cstring>
#include <exception>
#include <sstream>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "backend_factory.h"
#include "hetrun/base/log_line.h"
#include "hetrun/base/logging.h"
#include "hetrun/base/units.h"
#include "hetrun/job/emulated_slowdown.h"
#include "hetrun/job/heartbeat.h"

namespace hetrun {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

Result<c10::intrusive_ptr<c10d::Store>> ConnectStore(const WorkerIdentity& id,
                                                     std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(id.master_port);
  options.isServer = !id.launcher_hosts_store && id.rank == 0;
  options.numWorkers =
      id.launcher_hosts_store ? std::nullopt : std::optional<std::size_t>(id.world_size);
  options.waitWorkers = false;
  options.timeout = timeout;
  std::string where = id.master_addr + ":" + std::to_string(id.master_port);
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(id.master_addr, options);
    // Keys of each restart attempt are kept apart, like torchrun's /worker/attempt_N prefix.
    return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::PrefixStore>(
        "hetrun/attempt_" + std::to_string(id.restart_count), store));
  } catch (const std::exception& e) {
    return UnavailableError(std::string(options.isServer ? "hosting" : "joining") +
                            " the job's TCPStore at " + where + " (MASTER_ADDR/MASTER_PORT, " +
                            id.source + "): " + e.what());
  }
}

}  // namespace

Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>> Runtime::FromEnv(const Environment& env,
                                                  const RuntimeOptions& options) {
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->env_ = env;
  rt->timeout_ = options.timeout;
  HETRUN_ASSIGN_OR_RETURN(rt->identity_, ReadWorkerIdentity(env));
  const WorkerIdentity& id = rt->identity_;
  SetLogIdentity(-1, id.rank);
  HETRUN_ASSIGN_OR_RETURN(rt->layout_, ReadGroupLayout(env, id.world_size));
  rt->stage_ = rt->layout_.StageOf(id.rank);

  bool gpu = !options.force_cpu && torch::cuda::is_available();
  if (gpu) {
    int count = static_cast<int>(torch::cuda::device_count());
    if (id.local_rank >= count) {
      return InvalidArgumentError("local rank " + std::to_string(id.local_rank) + " has no GPU: " +
                                  std::to_string(count) + " visible (CUDA_VISIBLE_DEVICES)");
    }
    rt->device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(id.local_rank));
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(id.local_rank));
  }
  rt->backend_name_ = gpu ? "nccl" : "gloo";
  HETRUN_ASSIGN_OR_RETURN(double slowdown, EmulatedSlowdownFromEnv(env));
  if (gpu && slowdown != 1.0) {
    LogLine(LogLevel::kWarn, "HETRUN_EMULATE_SLOWDOWN=" + std::to_string(slowdown) +
                                 " is CPU emulation; ignored on a GPU");
    slowdown = 1.0;
  }
  rt->slowdown_ = slowdown;
  // The whole schedule (docs/ARCHITECTURE.md §5.4): the step timer and the pipeline executor take
  // each step's factor, as the Python clocks do. On a GPU it stays the default (1 everywhere).
  if (!gpu) {
    HETRUN_ASSIGN_OR_RETURN(rt->schedule_, EmulatedSlowdownScheduleFromEnv(env));
  }

  HETRUN_ASSIGN_OR_RETURN(rt->store_, ConnectStore(id, options.timeout));
  internal::BackendSpec spec;
  spec.nccl = gpu;
  spec.timeout = options.timeout;
  spec.interface_host = IsLoopback(id.master_addr) ? "127.0.0.1" : "";
  spec.rank = id.rank;
  spec.size = id.world_size;
  HETRUN_ASSIGN_OR_RETURN(
      rt->world_,
      internal::CreateBackend(c10::make_intrusive<c10d::PrefixStore>("world", rt->store_), spec));

  const std::vector<int>& members = rt->layout_.stages[static_cast<size_t>(rt->stage_)];
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == id.rank) rt->data_parallel_rank_ = static_cast<int>(i);
  }
  if (rt->layout_.stages.size() == 1) {
    rt->data_parallel_ = rt->world_;
  } else {
    // Only members create a group's backend; its keys live under its own prefix.
    spec.rank = rt->data_parallel_rank_;
    spec.size = static_cast<int>(members.size());
    HETRUN_ASSIGN_OR_RETURN(
        rt->data_parallel_,
        internal::CreateBackend(c10::make_intrusive<c10d::PrefixStore>(
                                    "stage_" + std::to_string(rt->stage_), rt->store_),
                                spec));
  }
  std::ostringstream line;
  line << "runtime: rank " << id.rank << " of " << id.world_size << " (" << id.source << "), "
       << rt->backend_name_ << " on " << rt->device_.str() << ", stage " << rt->stage_
       << ", data-parallel rank " << rt->data_parallel_rank_ << " of " << members.size() << " ("
       << rt->layout_.source << ")";
  LogLine(LogLevel::kInfo, line.str());
  return rt;
}

const std::vector<int>& Runtime::data_parallel_ranks() const {
  return layout_.stages[static_cast<size_t>(stage_)];
}

Result<std::vector<std::byte>> Runtime::AllGatherBytes(c10d::Backend& group,
                                                       std::span<const std::byte> mine) const {
  const int64_t n = static_cast<int64_t>(mine.size());
  const int size = group.getSize();
  try {
    torch::Tensor host = torch::empty({n}, torch::kUInt8);
    std::memcpy(host.data_ptr(), mine.data(), mine.size());
    std::vector<torch::Tensor> inputs{host.to(device_)};
    std::vector<std::vector<torch::Tensor>> outputs(1);
    for (int r = 0; r < size; ++r) {
      outputs[0].push_back(torch::empty({n}, torch::TensorOptions(torch::kUInt8).device(device_)));
    }
    group.allgather(outputs, inputs)->wait(timeout_);
    torch::Tensor all = torch::cat(outputs[0]).to(torch::kCPU).contiguous();
    std::vector<std::byte> bytes(static_cast<size_t>(n) * static_cast<size_t>(size));
    std::memcpy(bytes.data(), all.data_ptr(), bytes.size());
    return bytes;
  } catch (const std::exception& e) {
    return UnavailableError(std::string("all-gather of ") + std::to_string(n) + " bytes over " +
                            backend_name_ + ": " + e.what());
  }
}

Status Runtime::ApplyMemoryCeiling(const Environment& env) const {
  HETRUN_ASSIGN_OR_RETURN(std::optional<uint64_t> ceiling,
                          env.GetBytes("HETRUN_MEMORY_CEILING_BYTES"));
  if (!ceiling) {
    LogLine(LogLevel::kInfo,
            "memory ceiling: HETRUN_MEMORY_CEILING_BYTES is not set; allocator not capped");
    return Status::Ok();
  }
  if (!on_gpu()) {
    LogLine(LogLevel::kInfo, "memory ceiling " + FormatMiB(*ceiling) +
                                 " does not apply on CPU (no CUDA caching allocator to cap)");
    return Status::Ok();
  }
  try {
    const cudaDeviceProp* props = at::cuda::getDeviceProperties(device_.index());
    double total = static_cast<double>(props->totalGlobalMem);
    if (static_cast<double>(*ceiling) > total) {
      return ResourceExhaustedError("HETRUN_MEMORY_CEILING_BYTES=" + FormatMiB(*ceiling) +
                                    " exceeds " + device_.str() + "'s " +
                                    FormatMiB(props->totalGlobalMem));
    }
    double fraction = static_cast<double>(*ceiling) / total;
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, device_.index());
    LogLine(LogLevel::kInfo, "memory ceiling " + FormatMiB(*ceiling) +
                                 ": CUDA caching allocator capped at " + std::to_string(fraction) +
                                 " of " + FormatMiB(props->totalGlobalMem) + " on " +
                                 device_.str());
    return Status::Ok();
  } catch (const std::exception& e) {
    return InternalError(std::string("setMemoryFraction on ") + device_.str() + ": " + e.what());
  }
}

Status Runtime::Heartbeat() const {
  return Beat(env_);
}

Status Runtime::Barrier() const {
  try {
    world_->barrier()->wait(timeout_);
    return Status::Ok();
  } catch (const std::exception& e) {
    return UnavailableError(std::string("barrier over ") + backend_name_ + ": " + e.what());
  }
}

}  // namespace hetrun

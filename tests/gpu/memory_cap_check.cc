// tests/gpu: the job-wide memory ceiling on a real GPU. Joins a one-rank runtime (RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment), applies HETRUN_MEMORY_CEILING_BYTES
// through Runtime::ApplyMemoryCeiling (setMemoryFraction), then allocates BELOW bytes (must
// succeed) and ABOVE bytes (must fail with torch's OutOfMemoryError). Prints key=value lines
// for tests/gpu/run.sh. Exit: 0 both as expected, 1 not, 2 usage or runtime set-up failure.
//
//   gpu_memory_cap_check BELOW_BYTES ABOVE_BYTES
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <hetrun/base/env.h>
#include <hetrun/base/units.h>
#include <hetrun/runtime.h>
#include <torch/torch.h>

#include <cstdio>
#include <exception>
#include <string>

namespace {

// First line of an exception message (torch's OOM text runs over several lines).
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

enum class Outcome { kAllocated, kOutOfMemory, kOtherError };

Outcome TryAllocate(torch::Device device, uint64_t bytes, std::string* detail) {
  try {
    torch::Tensor t = torch::empty({static_cast<int64_t>(bytes)},
                                   torch::TensorOptions(torch::kUInt8).device(device));
    t.fill_(1);  // touch it: the allocation is real
    torch::cuda::synchronize(device.index());
    *detail = "allocated";
    return Outcome::kAllocated;
  } catch (const c10::OutOfMemoryError& e) {
    *detail = FirstLine(e.what_without_backtrace());
    return Outcome::kOutOfMemory;
  } catch (const std::exception& e) {
    *detail = FirstLine(e.what());
    return Outcome::kOtherError;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpu_memory_cap_check BELOW_BYTES ABOVE_BYTES\n");
    return 2;
  }
  hetrun::Result<uint64_t> below = hetrun::ParseBytes(argv[1]);
  hetrun::Result<uint64_t> above = hetrun::ParseBytes(argv[2]);
  if (!below.ok() || !above.ok() || *below >= *above) {
    std::fprintf(stderr, "gpu_memory_cap_check: need BELOW_BYTES < ABOVE_BYTES, got '%s' '%s'\n",
                 argv[1], argv[2]);
    return 2;
  }
  hetrun::Environment env = hetrun::Environment::FromProcess();
  auto runtime = hetrun::Runtime::FromEnv(env);
  if (!runtime.ok()) {
    std::fprintf(stderr, "gpu_memory_cap_check: %s\n", runtime.status().ToString().c_str());
    return 2;
  }
  if (!(*runtime)->on_gpu()) {
    std::fprintf(stderr, "gpu_memory_cap_check: the runtime found no GPU\n");
    return 2;
  }
  const torch::Device device = (*runtime)->device();
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes); e != cudaSuccess) {
    std::fprintf(stderr, "gpu_memory_cap_check: cudaMemGetInfo: %s\n", cudaGetErrorString(e));
    return 2;
  }
  std::printf("total_bytes=%zu\nfree_bytes=%zu\n", total_bytes, free_bytes);
  if (hetrun::Status s = (*runtime)->ApplyMemoryCeiling(env); !s.ok()) {
    std::fprintf(stderr, "gpu_memory_cap_check: %s\n", s.ToString().c_str());
    return 2;
  }
  std::string detail;
  const Outcome low = TryAllocate(device, *below, &detail);
  std::printf("below_bytes=%llu\nbelow_outcome=%s\n", static_cast<unsigned long long>(*below),
              detail.c_str());
  c10::cuda::CUDACachingAllocator::emptyCache();
  const Outcome high = TryAllocate(device, *above, &detail);
  std::printf("above_bytes=%llu\nabove_outcome=%s\n", static_cast<unsigned long long>(*above),
              detail.c_str());
  const bool ok = low == Outcome::kAllocated && high == Outcome::kOutOfMemory;
  std::printf("below_ok=%d\nabove_oom=%d\n", low == Outcome::kAllocated ? 1 : 0,
              high == Outcome::kOutOfMemory ? 1 : 0);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

// tests/gpu: the runtime's process group on a real GPU. Joins the runtime (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT from the environment; one rank per GPU: NCCL refuses two ranks of one
// communicator on the same device), checks that it chose NCCL, and times the tuner's window
// exchange: Runtime::AllGatherBytes of one RankWindow (tuner_loop.h) per rank. Each call is timed
// with CUDA events on the current stream (the call ends with a device-to-host copy that waits for
// the NCCL stream) and with the host clock. Prints key=value lines for tests/gpu/run.sh.
// Exit: 0 every gather returned every rank's bytes, 1 a wrong result, 2 set-up failure.
//
//   gpu_nccl_check [ITERATIONS]
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#include <hetrun/base/env.h>
#include <hetrun/runtime.h>
#include <hetrun/tuner_loop.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

bool Check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_nccl_check: %s: %s\n", call, cudaGetErrorString(e));
  return false;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t at = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[at];
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  if (argc == 2) iterations = std::atoi(argv[1]);
  if (argc > 2 || iterations < 1 || iterations > 100000) {
    std::fprintf(stderr, "usage: gpu_nccl_check [ITERATIONS 1..100000]\n");
    return 2;
  }
  hetrun::Environment env = hetrun::Environment::FromProcess();
  auto runtime = hetrun::Runtime::FromEnv(env);
  if (!runtime.ok()) {
    std::fprintf(stderr, "gpu_nccl_check: %s\n", runtime.status().ToString().c_str());
    return 2;
  }
  hetrun::Runtime& rt = **runtime;
  std::printf("backend=%s\nworld_size=%d\ndevice=%s\n", rt.backend_name().c_str(), rt.world_size(),
              rt.device().str().c_str());
  if (!rt.on_gpu() || rt.backend_name() != "nccl") {
    std::fprintf(stderr, "gpu_nccl_check: expected NCCL on a GPU, got %s on %s\n",
                 rt.backend_name().c_str(), rt.device().str().c_str());
    return 2;
  }
  hetrun::RankWindow mine{};
  mine.fit.n = rt.rank() + 1;
  mine.compute_ms = 1.5 * (rt.rank() + 1);
  const auto* bytes = reinterpret_cast<const std::byte*>(&mine);
  const std::span<const std::byte> payload(bytes, sizeof(mine));
  std::printf("payload_bytes=%zu\n", payload.size());

  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  if (!Check(cudaEventCreate(&start), "cudaEventCreate") ||
      !Check(cudaEventCreate(&stop), "cudaEventCreate")) {
    return 2;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  std::vector<double> event_us;
  std::vector<double> host_us;
  const int warmup = 20;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (!Check(cudaEventRecord(start, stream), "cudaEventRecord")) return 2;
    const auto host_start = std::chrono::steady_clock::now();
    auto gathered = rt.AllGatherBytes(rt.data_parallel_group(), payload);
    const auto host_end = std::chrono::steady_clock::now();
    if (!Check(cudaEventRecord(stop, stream), "cudaEventRecord") ||
        !Check(cudaEventSynchronize(stop), "cudaEventSynchronize")) {
      return 2;
    }
    if (!gathered.ok()) {
      std::fprintf(stderr, "gpu_nccl_check: %s\n", gathered.status().ToString().c_str());
      return 1;
    }
    const size_t members = rt.data_parallel_ranks().size();
    if (gathered->size() != members * sizeof(mine)) {
      std::fprintf(stderr, "gpu_nccl_check: gathered %zu bytes, expected %zu\n", gathered->size(),
                   members * sizeof(mine));
      return 1;
    }
    const size_t at = static_cast<size_t>(rt.data_parallel_rank()) * sizeof(mine);
    if (!std::equal(payload.begin(), payload.end(), gathered->begin() + static_cast<long>(at))) {
      std::fprintf(stderr, "gpu_nccl_check: this rank's record came back changed\n");
      return 1;
    }
    if (i < warmup) continue;
    float ms = 0;
    if (!Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime")) return 2;
    event_us.push_back(1000.0 * ms);
    host_us.push_back(std::chrono::duration<double, std::micro>(host_end - host_start).count());
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::printf("iterations=%d\nallgather_event_us_median=%.2f\nallgather_event_us_p90=%.2f\n",
              iterations, Percentile(event_us, 0.5), Percentile(event_us, 0.9));
  std::printf("allgather_host_us_median=%.2f\nallgather_host_us_p90=%.2f\n",
              Percentile(host_us, 0.5), Percentile(host_us, 0.9));
  std::fflush(stdout);
  return 0;
}

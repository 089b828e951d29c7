// The probe kernel: proves a device can run this library's kernel images, and which one ran.
#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "hetrun/kernels.h"

namespace hetrun::kernels {
namespace {

__global__ void ProbeKernel(int* arch_out) {
#ifdef __CUDA_ARCH__
  if (threadIdx.x == 0 && blockIdx.x == 0) *arch_out = __CUDA_ARCH__;
#endif
}

}  // namespace

Result<int> DeviceCount() {
  int count = 0;
  HETRUN_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  if (count == 0) return UnavailableError("cudaGetDeviceCount: no CUDA device visible");
  return count;
}

Result<ProbeResult> RunProbe(int device) {
  ProbeResult result;
  result.device = device;
  HETRUN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaDeviceProp prop{};
  HETRUN_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  result.major = prop.major;
  result.minor = prop.minor;
  result.name = prop.name;

  int* arch_device = nullptr;
  HETRUN_CUDA_RETURN_IF_ERROR(cudaMalloc(&arch_device, sizeof(int)));
  HETRUN_CUDA_RETURN_IF_ERROR(cudaMemset(arch_device, 0, sizeof(int)));
  ProbeKernel<<<1, 32>>>(arch_device);
  // Check the launch, the run and the copy in turn, but free the buffer whatever happened.
  Status launch = CudaStatus(cudaGetLastError(), "ProbeKernel<<<1, 32>>>");
  Status ran = launch.ok() ? CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize") : launch;
  Status copied = ran.ok() ? CudaStatus(cudaMemcpy(&result.kernel_arch, arch_device, sizeof(int),
                                                   cudaMemcpyDeviceToHost),
                                        "cudaMemcpy")
                           : ran;
  Status freed = CudaStatus(cudaFree(arch_device), "cudaFree");
  HETRUN_RETURN_IF_ERROR(copied);
  HETRUN_RETURN_IF_ERROR(freed);

  size_t free_bytes = 0;
  size_t total_bytes = 0;
  HETRUN_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  result.free_bytes = free_bytes;
  result.total_bytes = total_bytes;
  return result;
}

std::string CompiledArchitectures() {
  return HETRUN_CUDA_ARCHITECTURES;
}

}  // namespace hetrun::kernels

// Every CUDA runtime call is checked at its call site; the message names the call.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "hetrun/base/status.h"

namespace hetrun::kernels {

inline Status CudaStatus(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return Status::Ok();
  std::string message = std::string(call) + ": " + cudaGetErrorName(err) + " (" +
                        std::to_string(static_cast<int>(err)) + "): " + cudaGetErrorString(err);
  switch (err) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return ArchMismatchError(std::move(message));
    case cudaErrorMemoryAllocation:
      return ResourceExhaustedError(std::move(message));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return UnavailableError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

}  // namespace hetrun::kernels

#define HETRUN_CUDA_RETURN_IF_ERROR(call) \
  HETRUN_RETURN_IF_ERROR(::hetrun::kernels::CudaStatus((call), #call))

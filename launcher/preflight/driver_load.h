// The on-node confirmation of the offline verdicts: every kernel module (fatbin container) of the
// scanned files is loaded through the CUDA driver (cuModuleLoadData) on every visible GPU, in a
// short-lived child process that dlopens libcuda.so.1 (nothing links libcuda, and the parent
// never initialises CUDA).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// Load results of one file on one device.
struct DriverFileLoad {
  int device = 0;
  size_t file = 0;          ///< index into the `files` argument
  int loaded = 0;           ///< modules that loaded (SASS or PTX JIT)
  int no_binary = 0;        ///< CUDA_ERROR_NO_BINARY_FOR_GPU (209): no image for this GPU
  int other_errors = 0;     ///< any other failure (JIT, unsupported PTX version, ...)
  std::string first_error;  ///< e.g. "container 3: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"
};

struct DriverLoadReport {
  bool skipped = false;     ///< no driver or no device
  std::string skip_reason;  ///< "no GPU", "libcuda.so.1 not found", ...
  int devices = 0;
  std::vector<DriverFileLoad> loads;
};

/// Loads every kernel module of `files` on every visible device, in a child process.
Result<DriverLoadReport> LoadModulesInChild(const std::vector<std::string>& files,
                                            std::chrono::milliseconds timeout);

/// The child's line protocol (exposed for tests): "devices N", "skip REASON",
/// "load DEVICE FILE LOADED NO_BINARY OTHER FIRST_ERROR".
Result<DriverLoadReport> ParseDriverLoadOutput(const std::string& text);

}  // namespace hetrun::launcher

// What libtorch this runtime was built against and what it sees at run time.
// Declared without torch types so any translation unit may include it.
#pragma once

#include <string>

namespace hetrun {

struct TorchInfo {
  std::string version;          ///< e.g. "2.11.0"
  bool cuda_available = false;  ///< a CUDA device is usable now
  int device_count = 0;         ///< visible CUDA devices
};

/// Build and run-time facts of the linked libtorch (libhetrun_torch).
TorchInfo GetTorchInfo();

}  // namespace hetrun

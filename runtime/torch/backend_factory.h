// Creation of c10d backends (internal to hetrun_torch): Gloo on CPU, NCCL on GPU. The only
// translation unit that includes ProcessGroupGloo.hpp / ProcessGroupNCCL.hpp.
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "hetrun/base/status.h"

namespace hetrun::internal {

struct BackendSpec {
  bool nccl = false;           ///< else Gloo
  int rank = 0;                ///< rank in the group
  int size = 1;                ///< group size
  std::string interface_host;  ///< Gloo: address to bind ("127.0.0.1"), empty = the host's name
  std::chrono::milliseconds timeout{};
};

/// A backend over `store` (already prefixed for the group). Exceptions from c10d become
/// kUnavailable (peers unreachable, timeouts) naming the backend.
Result<c10::intrusive_ptr<c10d::Backend>> CreateBackend(
    const c10::intrusive_ptr<c10d::Store>& store, const BackendSpec& spec);

}  // namespace hetrun::internal

// See ../README.md: Gloo's communication context, held by ProcessGroupGloo behind shared_ptr.
// setTimeout is the one member torch's inline code names (ProcessGroupGloo::setTimeout); it is
// defined in libtorch_cpu.so.
#pragma once

#include <chrono>

namespace gloo {
class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};
}  // namespace gloo

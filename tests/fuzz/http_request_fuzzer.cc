// Fuzzes the request-head parser of the /metrics endpoint (launcher/metrics/http_request.h):
// bytes from any client on the pod's network.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "metrics/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  hetrun::launcher::HeadResult result = hetrun::launcher::ParseRequestHead(bytes);
  if (result.state == hetrun::launcher::HeadState::kComplete &&
      (result.head.path.empty() || result.head.path[0] != '/')) {
    __builtin_trap();
  }
  return 0;
}

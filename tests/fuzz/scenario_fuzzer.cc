// Fuzzes the `hetrun simulate` scenario parser: any bytes give a Scenario or an error, never a
// crash, hang or escaped exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hetrun/tuner/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)hetrun::tuner::ParseScenario(text);
  return 0;
}

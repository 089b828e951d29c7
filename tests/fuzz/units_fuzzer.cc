// Fuzzes the parsers of untrusted environment values: integers, numbers, durations, sizes, bools.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hetrun/base/env.h"
#include "hetrun/base/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)hetrun::ParseInt(text);
  (void)hetrun::ParseIntInRange(text, 0, 65535);
  (void)hetrun::ParseDouble(text);
  (void)hetrun::ParseDuration(text);
  (void)hetrun::ParseBytes(text);
  (void)hetrun::ParseBool(text);
  hetrun::Environment env(
      {{"RANK", std::string(text)}, {"HETRUN_TERMINATION_LOG", std::string(text)}});
  (void)env.GetInt("RANK");
  (void)env.GetDuration("RANK");
  (void)env.GetBytes("HETRUN_TERMINATION_LOG");
  return 0;
}

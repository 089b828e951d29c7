// Fuzzes the check of a collective-check probe's result file (hostile or corrupt JSON, fields of
// any type, ranks out of range; launcher/preflight/collective/collective_result.h): it returns a
// status for every input, never throws or crashes, for a one-rank, a small and a large job.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "preflight/collective/collective_result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size > hetrun::launcher::CollectiveResultLimit(128)) return 0;  // hetrun reads no more
  nlohmann::json result = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) return 0;
  for (int world : {1, 2, 128}) (void)hetrun::launcher::CheckCollectiveResult(result, world);
  return 0;
}

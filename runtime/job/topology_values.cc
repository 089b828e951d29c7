// Value checks shared by the topology conventions: every error names the variable (or flag),
// its value as shown safely, and where it came from.
#include <string>

#include "hetrun/base/units.h"
#include "job/topology_internal.h"

namespace hetrun::topology_internal {

std::string Shown(std::string_view text) {
  constexpr size_t kMax = 80;
  std::string out;
  for (char c : text.substr(0, kMax)) {
    auto byte = static_cast<unsigned char>(c);
    out += (byte >= 0x20 && byte < 0x7f) ? c : '?';
  }
  if (text.size() > kMax) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

Status BadValue(std::string_view name, std::string_view value, std::string_view source,
                std::string_view why, StatusCode code) {
  return Status(code, std::string(name) + "='" + Shown(value) + "' (" + std::string(source) +
                          "): " + std::string(why));
}

Result<std::optional<int>> ReadEnvInt(const Environment& env, std::string_view name,
                                      std::string_view source, int64_t min, int64_t max) {
  std::optional<std::string> text = env.Get(name);
  if (!text) return std::optional<int>();
  auto value = ParseIntInRange(*text, min, max);
  if (!value.ok()) return BadValue(name, *text, source, value.status().message());
  return std::optional<int>(static_cast<int>(*value));
}

Status CheckHost(std::string_view name, std::string_view value, std::string_view source,
                 StatusCode code) {
  if (value.empty()) return BadValue(name, value, source, "must not be empty", code);
  if (value.size() > 253) {
    return BadValue(name, value, source, "is longer than a host name can be (253)", code);
  }
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f || c == ',' || c == '/') {
      return BadValue(name, value, source, "is not a host name or address", code);
    }
  }
  return Status::Ok();
}

}  // namespace hetrun::topology_internal

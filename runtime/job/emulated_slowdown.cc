#include "hetrun/job/emulated_slowdown.h"

#include <cmath>
#include <string>

#include "hetrun/base/units.h"

namespace hetrun {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Result<double> ParseFactor(std::string_view text, std::string_view whole) {
  Result<double> factor = ParseDouble(Trim(text));
  if (!factor.ok() || !std::isfinite(*factor) || *factor < 1.0) {
    return InvalidArgumentError("'" + std::string(whole) + "': factor '" + std::string(text) +
                                "' must be a number >= 1 (e.g. 3.17)");
  }
  return *factor;
}

}  // namespace

Result<double> ParseEmulatedSlowdown(std::string_view text, std::string_view family) {
  std::string_view whole = text;
  text = Trim(text);
  if (text.empty()) return 1.0;
  if (text.find('=') == std::string_view::npos) return ParseFactor(text, whole);
  std::optional<double> match;
  std::optional<double> fallback;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("'" + std::string(whole) + "': entry '" + std::string(entry) +
                                  "' is not FAMILY=FACTOR");
    }
    std::string_view key = Trim(entry.substr(0, eq));
    HETRUN_ASSIGN_OR_RETURN(double factor, ParseFactor(entry.substr(eq + 1), whole));
    if (key == "*") {
      fallback = factor;
    } else if (key == family) {
      match = factor;
    }
  }
  if (match) return *match;
  if (fallback) return *fallback;
  if (family.empty()) {
    return InvalidArgumentError("'" + std::string(whole) +
                                "' is a per-family map but HETRUN_GPU_FAMILY is not set (run "
                                "under `hetrun run`, set it, or add a '*=FACTOR' entry)");
  }
  return InvalidArgumentError("'" + std::string(whole) + "' has no entry for GPU family '" +
                              std::string(family) + "' (add " + std::string(family) +
                              "=FACTOR or *=FACTOR)");
}

Result<double> EmulatedSlowdownFromEnv(const Environment& env) {
  std::optional<std::string> value = env.Get("HETRUN_EMULATE_SLOWDOWN");
  if (!value) return 1.0;
  Result<double> factor = ParseEmulatedSlowdown(*value, env.Get("HETRUN_GPU_FAMILY").value_or(""));
  if (!factor.ok()) return factor.status().WithContext("HETRUN_EMULATE_SLOWDOWN");
  return factor;
}

}  // namespace hetrun

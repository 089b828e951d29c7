#include "hetrun/base/units.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace hetrun {
namespace {

std::string Quote(std::string_view text) {
  // Untrusted text may be huge or binary: keep error messages short and printable.
  constexpr size_t kMaxShown = 64;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

// Splits "512MiB" into the number part and the unit part.
void SplitNumberAndUnit(std::string_view text, std::string_view* number, std::string_view* unit) {
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    bool numeric = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+';
    bool exponent =
        (c == 'e' || c == 'E') && i > 0 && i + 1 < text.size() &&
        ((text[i + 1] >= '0' && text[i + 1] <= '9') || text[i + 1] == '-' || text[i + 1] == '+');
    if (!numeric && !exponent) break;
    ++i;
  }
  *number = text.substr(0, i);
  *unit = text.substr(i);
}

}  // namespace

Result<int64_t> ParseInt(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty value where an integer was expected");
  int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) {
    return InvalidArgumentError(Quote(text) + " is out of range for an integer");
  }
  if (ec != std::errc() || ptr != last) {
    return InvalidArgumentError(Quote(text) + " is not an integer");
  }
  return value;
}

Result<int64_t> ParseIntInRange(std::string_view text, int64_t min, int64_t max) {
  HETRUN_ASSIGN_OR_RETURN(int64_t value, ParseInt(text));
  if (value < min || value > max) {
    return InvalidArgumentError(Quote(text) + " is outside [" + std::to_string(min) + ", " +
                                std::to_string(max) + "]");
  }
  return value;
}

Result<double> ParseDouble(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty value where a number was expected");
  double value = 0;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, value);
  if (ec != std::errc() || ptr != last || !std::isfinite(value)) {
    return InvalidArgumentError(Quote(text) + " is not a finite number");
  }
  return value;
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  std::string_view number, unit;
  SplitNumberAndUnit(text, &number, &unit);
  auto parsed = ParseDouble(number);
  if (!parsed.ok() || *parsed < 0) {
    return InvalidArgumentError(Quote(text) + " is not a duration (use 30, 30s, 500ms, 5m or 1h)");
  }
  double scale_ms = 0;
  if (unit.empty() || unit == "s") {
    scale_ms = 1000;
  } else if (unit == "ms") {
    scale_ms = 1;
  } else if (unit == "m" || unit == "min") {
    scale_ms = 60'000;
  } else if (unit == "h") {
    scale_ms = 3'600'000;
  } else {
    return InvalidArgumentError(Quote(text) + " has an unknown duration unit (use ms, s, m or h)");
  }
  double ms = *parsed * scale_ms;
  // A year is far beyond any timeout hetrun takes; refusing more keeps arithmetic safe.
  constexpr double kMaxMs = 366.0 * 24 * 3600 * 1000;
  if (ms > kMaxMs) return InvalidArgumentError(Quote(text) + " is longer than a year");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
}

Result<uint64_t> ParseBytes(std::string_view text) {
  std::string_view number, unit;
  SplitNumberAndUnit(text, &number, &unit);
  auto parsed = ParseDouble(number);
  if (!parsed.ok() || *parsed < 0) {
    return InvalidArgumentError(Quote(text) + " is not a size (use bytes, 512MiB or 100GiB)");
  }
  struct UnitScale {
    std::string_view name;
    double scale;
  };
  static constexpr UnitScale kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
  };
  for (const UnitScale& u : kUnits) {
    if (unit == u.name) {
      double bytes = *parsed * u.scale;
      if (bytes >= 1.8e19) return InvalidArgumentError(Quote(text) + " is too large");
      return static_cast<uint64_t>(std::llround(bytes));
    }
  }
  return InvalidArgumentError(
      Quote(text) + " has an unknown size unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
}

std::string FormatMiB(uint64_t bytes) {
  return std::to_string(bytes / 1048576) + " MiB";
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  int64_t ms = duration.count();
  if (ms < 1000 && ms != 0) return std::to_string(ms) + "ms";
  int64_t s = ms / 1000;
  std::string out;
  if (s >= 3600) {
    out += std::to_string(s / 3600) + "h";
    s %= 3600;
  }
  if (s >= 60) {
    out += std::to_string(s / 60) + "m";
    s %= 60;
  }
  if (s > 0 || out.empty()) out += std::to_string(s) + "s";
  return out;
}

std::vector<std::string_view> SplitOn(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

Result<bool> ParseBool(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  return InvalidArgumentError(Quote(text) + " is not a boolean (use true/false, 1/0, yes/no)");
}

}  // namespace hetrun

// The one rule for hetrun's settings: the flag when given, else its HETRUN_* variable when set,
// else the default. One parser reads both; a bad flag is a usage error (exit 64) naming the flag,
// a bad variable a configuration error (exit 78) naming the variable and its value.
#pragma once

#include <chrono>
#include <cxxopts.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/base/units.h"

namespace hetrun::launcher {

template <typename T>
using SettingParser = std::function<Result<T>(std::string_view)>;

template <typename T>
Result<T> Setting(const cxxopts::ParseResult& parsed, const std::string& flag,
                  const Environment& env, std::string_view variable, T fallback,
                  const SettingParser<T>& parse) {
  if (parsed.count(flag)) {
    std::string text = parsed[flag].as<std::string>();
    Result<T> value = parse(text);
    if (!value.ok())
      return UsageError("--" + flag + " '" + text + "': " + value.status().message());
    return value;
  }
  if (std::optional<std::string> text = env.Get(variable)) {
    Result<T> value = parse(*text);
    if (!value.ok()) {
      return InvalidArgumentError(std::string(variable) + "='" + *text +
                                  "' (environment): " + value.status().message());
    }
    return value;
  }
  return fallback;
}

/// A duration (30, 30s, 5m); 0 allowed.
inline Result<std::chrono::milliseconds> ParseDurationSetting(std::string_view text) {
  return ParseDuration(text);
}

/// A duration above zero.
inline Result<std::chrono::milliseconds> ParsePositiveDuration(std::string_view text) {
  HETRUN_ASSIGN_OR_RETURN(std::chrono::milliseconds value, ParseDuration(text));
  if (value.count() <= 0) return InvalidArgumentError("must be positive");
  return value;
}

/// A byte count (2GiB, 500MB), as an optional so "not given" stays distinguishable.
inline Result<std::optional<uint64_t>> ParseBytesSetting(std::string_view text) {
  HETRUN_ASSIGN_OR_RETURN(uint64_t value, ParseBytes(text));
  return std::optional<uint64_t>(value);
}

/// An integer in [min, max].
inline SettingParser<int> IntInRange(int min, int max) {
  return [min, max](std::string_view text) -> Result<int> {
    HETRUN_ASSIGN_OR_RETURN(int64_t value, ParseIntInRange(text, min, max));
    return static_cast<int>(value);
  };
}

}  // namespace hetrun::launcher

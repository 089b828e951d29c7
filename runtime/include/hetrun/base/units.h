// Strict parsing of numbers, durations and sizes given on the command line or in the environment.
// Errors say what was expected; callers add which flag or variable the text came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun {

/// A base-10 integer with an optional leading '-', no spaces, no trailing characters, in range.
Result<int64_t> ParseInt(std::string_view text);

/// ParseInt restricted to [min, max].
Result<int64_t> ParseIntInRange(std::string_view text, int64_t min, int64_t max);

/// A finite floating-point number ("3.17", "2.0e9").
Result<double> ParseDouble(std::string_view text);

/// Seconds ("30", "1.5") or a number with a unit: ms, s, m, h ("500ms", "30s", "5m", "1h").
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

/// Bytes ("1048576") or a number with a unit: B, KiB, MiB, GiB, TiB (powers of 1024) or
/// KB, MB, GB, TB (powers of 1000) ("512MiB", "100GiB", "80GB").
Result<uint64_t> ParseBytes(std::string_view text);

/// "81049 MiB" style: bytes in MiB with no rounding up.
std::string FormatMiB(uint64_t bytes);

/// "30s", "1m30s", "250ms".
std::string FormatDuration(std::chrono::milliseconds duration);

/// The pieces of `text` between the separators (empty pieces kept: "a,,b" -> "a", "", "b";
/// "" -> one empty piece). The views point into `text`.
std::vector<std::string_view> SplitOn(std::string_view text, char sep);

/// True for "1", "true", "yes", "on" (any case); false for "0", "false", "no", "off"; else error.
Result<bool> ParseBool(std::string_view text);

}  // namespace hetrun

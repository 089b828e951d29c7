// Logging set-up. hetrun logs through spdlog's default logger; this header configures it once
// with a UTC timestamp and the `[hetrun node N rank R]` prefix (text) or one JSON object per line
// (json). Workers' lines pass through untouched in text and are wrapped in JSON objects in json
// (FormatWorkerLine), so a log shipper reads one format.
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

enum class LogFormat { kText, kJson };

struct LogOptions {
  LogFormat format = LogFormat::kText;
  std::string level = "info";  ///< trace, debug, info, warn, error, off
};

Result<LogFormat> ParseLogFormat(std::string_view text);

/// Log options from HETRUN_LOG_LEVEL / HETRUN_LOG_FORMAT; errors name the variable.
Result<LogOptions> LogOptionsFromEnv(const Environment& env);

/// Installs a stderr logger with the given format and level as spdlog's default logger.
Status ConfigureLogging(const LogOptions& options);

/// The format ConfigureLogging installed (text before it is called).
LogFormat CurrentLogFormat();

/// A worker's output line for --log-format json: {"time", "node" (when known), "rank",
/// "stream" (stdout or stderr), "msg"}, one object, no newline; bytes that are not UTF-8 are
/// replaced.
std::string FormatWorkerLine(int rank, std::string_view stream, std::string_view text);

/// Who this process is, shown in every line. -1 = not known yet (omitted from the prefix).
void SetLogIdentity(int node, int rank);

/// "[hetrun node 0 rank 3]" for the current identity.
std::string LogPrefix();

/// Formats one line exactly as the logger would (tests and the JSON contract use it).
std::string FormatLogLine(LogFormat format, std::string_view level, std::string_view message);

}  // namespace hetrun

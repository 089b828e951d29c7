// One log line through hetrun's configured logger (logging.h), for translation units that cannot
// include spdlog: libtorch bundles its own fmt headers, which shadow the system fmt spdlog is
// built against, so runtime/torch and the example trainer format their text themselves.
#pragma once

#include <string_view>

namespace hetrun {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void LogLine(LogLevel level, std::string_view message);

}  // namespace hetrun

#include "hetrun/base/log_line.h"

#include <spdlog/spdlog.h>

namespace hetrun {

void LogLine(LogLevel level, std::string_view message) {
  switch (level) {
    case LogLevel::kDebug:
      spdlog::debug("{}", message);
      return;
    case LogLevel::kInfo:
      spdlog::info("{}", message);
      return;
    case LogLevel::kWarn:
      spdlog::warn("{}", message);
      return;
    case LogLevel::kError:
      spdlog::error("{}", message);
      return;
  }
}

}  // namespace hetrun

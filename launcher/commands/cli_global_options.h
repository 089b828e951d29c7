// Options valid before any subcommand's own: --log-format and --log-level.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetrun/base/logging.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

struct CliGlobalOptions {
  std::optional<LogFormat> log_format;
  std::optional<std::string> log_level;
};

/// Removes --log-format/--log-level (as "--opt V" or "--opt=V") from `args` up to a lone "--",
/// anywhere on the line, so every subcommand accepts them.
Result<CliGlobalOptions> ExtractCliGlobalOptions(std::vector<std::string>* args);

}  // namespace hetrun::launcher

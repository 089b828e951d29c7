#include "commands/cli_global_options.h"

namespace hetrun::launcher {

Result<CliGlobalOptions> ExtractCliGlobalOptions(std::vector<std::string>* args) {
  CliGlobalOptions global;
  std::vector<std::string> kept;
  size_t i = 0;
  for (; i < args->size(); ++i) {
    const std::string& arg = (*args)[i];
    if (arg == "--") break;
    std::string name;
    std::optional<std::string> value;
    for (const char* option : {"--log-format", "--log-level"}) {
      std::string prefix = std::string(option) + "=";
      if (arg == option) {
        name = option;
        if (i + 1 >= args->size()) return UsageError(name + " needs a value");
        value = (*args)[++i];
      } else if (arg.rfind(prefix, 0) == 0) {
        name = option;
        value = arg.substr(prefix.size());
      }
    }
    if (name.empty()) {
      kept.push_back(arg);
    } else if (name == "--log-format") {
      auto format = ParseLogFormat(*value);
      if (!format.ok()) return UsageError("--log-format: " + format.status().message());
      global.log_format = *format;
    } else {
      global.log_level = *value;
    }
  }
  kept.insert(kept.end(), args->begin() + static_cast<long>(i), args->end());
  *args = std::move(kept);
  return global;
}

}  // namespace hetrun::launcher

#include "supervise/engine_args_env.h"

#include <spdlog/spdlog.h>

#include "hetrun/pipeline/engine_args.h"

namespace hetrun::launcher {

std::map<std::string, std::string> EngineArgsEnvironment(const pipeline::JobLayout& layout,
                                                         const plan::TorchtitanNames& names,
                                                         int attempt) {
  std::map<std::string, std::string> vars;
  const std::pair<const char*, Result<std::vector<std::string>>> rendered[] = {
      {"HETRUN_MEGATRON_ARGS", pipeline::MegatronArgumentsOfLayout(layout)},
      {"HETRUN_TORCHTITAN_ARGS", pipeline::TorchtitanArgumentsOfLayout(layout, names)}};
  for (const auto& [name, arguments] : rendered) {
    if (arguments.ok()) {
      vars[name] = pipeline::ArgumentLines(*arguments);
    } else if (attempt == 0) {
      spdlog::info("{} is not set for the workers: {}", name, arguments.status().message());
    }
  }
  return vars;
}

}  // namespace hetrun::launcher

#include "commands/run/run_command_line.h"

#include <spdlog/spdlog.h>

#include "commands/cli_parse.h"
#include "commands/run/run_options.h"
#include "commands/run/run_store.h"
#include "commands/setting.h"
#include "commands/torchrun_args.h"
#include "preflight/default_python.h"

namespace hetrun::launcher {

Result<RunCommandLine> ParseRunCommandLine(cxxopts::Options& options,
                                           const CommandContext& context) {
  HETRUN_ASSIGN_OR_RETURN(TorchrunArgs torchrun,
                          TranslateTorchrunArgs(context.args, KnownRunOptions(options)));
  RunCommandLine line;
  HETRUN_ASSIGN_OR_RETURN(line.free_port, ChooseFreePort(torchrun, &line.free_port_held));
  HETRUN_RETURN_IF_ERROR(ChooseStandaloneRunId(torchrun));
  HETRUN_ASSIGN_OR_RETURN(line.parsed, ParseSubcommandOptions(options, torchrun.options));
  line.help = line.parsed.count("help") > 0;
  if (line.help) return line;
  if (torchrun.program.empty()) {
    return UsageError(
        "hetrun run: no command (usage: hetrun run [OPTIONS] -- COMMAND [ARGS...], or "
        "hetrun run [OPTIONS] train.py [ARGS...] as torchrun)");
  }
  for (const std::string& ignored : torchrun.ignored) spdlog::warn("{}", ignored);
  HETRUN_ASSIGN_OR_RETURN(
      std::string python,
      Setting<std::string>(line.parsed, "python", context.env, "HETRUN_PYTHON", DefaultPython(),
                           [](std::string_view text) -> Result<std::string> {
                             if (text.empty()) return InvalidArgumentError("is empty");
                             return std::string(text);
                           }));
  line.command = WorkerCommand(torchrun, python);
  line.kind = torchrun.kind;
  return line;
}

}  // namespace hetrun::launcher

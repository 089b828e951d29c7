// hetrun run's command line: torchrun's spellings translated (commands/torchrun_args.h), the
// free port and the standalone run id chosen (commands/run/run_store.h), the options parsed by
// cxxopts, and the workers' argv.
#pragma once

#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "commands/command.h"
#include "commands/torchrun_args.h"
#include "hetrun/base/status.h"
#include "rendezvous/store_port.h"

namespace hetrun::launcher {

/// The options as cxxopts parsed them (after the torchrun translation) and the workers' argv.
struct RunCommandLine {
  cxxopts::ParseResult parsed;
  std::vector<std::string> command;
  ProgramKind kind = ProgramKind::kExec;  ///< how `command` starts (a Python worker or not)
  bool help = false;
  bool free_port = false;    ///< the port was chosen here (port 0 or --standalone): one node only
  StorePort free_port_held;  ///< that port, held since it was chosen
};

/// Parses `context.args` against `options` (commands/run/run_options.h). With --help, only
/// `parsed` and `help` are set; without a program, a usage error.
Result<RunCommandLine> ParseRunCommandLine(cxxopts::Options& options,
                                           const CommandContext& context);

}  // namespace hetrun::launcher

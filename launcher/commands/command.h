// Subcommands of the hetrun binary. Each lives in its own file
// (launcher/commands/<name>_command.cc) and is listed once in launcher/commands/command_table.cc.
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// What a subcommand gets: its own arguments (after its name), the environment snapshot, and
/// where to print. Subcommands never call exit(); they return an exit code or a Status.
struct CommandContext {
  std::vector<std::string> args;
  const Environment& env;
  std::ostream& out;
  std::ostream& err;
};

using CommandFn = Result<int> (*)(const CommandContext& context);

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  CommandFn run;
};

/// Every subcommand, in the order `hetrun --help` lists them.
std::span<const Subcommand> Subcommands();

/// The subcommand called `name`, or nullptr.
const Subcommand* FindSubcommand(std::string_view name);

/// The known subcommand closest to `name` (edit distance <= 2), or "".
std::string_view SuggestSubcommand(std::string_view name);

/// `hetrun --help`: usage, subcommands, global options, exit codes, environment variables.
std::string MainHelp();

/// Runs `hetrun ARGS...` (argv without the program name). Global options are already removed.
Result<int> Dispatch(const std::vector<std::string>& args, const Environment& env,
                     std::ostream& out, std::ostream& err);

// Subcommand entry points, one file each (launcher/commands/<name>_command.cc):
// commands::Run is `hetrun run`, commands::ExitCodes is `hetrun exit-codes`.
namespace commands {
Result<int> Run(const CommandContext& context);
Result<int> Env(const CommandContext& context);
Result<int> Plan(const CommandContext& context);
Result<int> Inspect(const CommandContext& context);
Result<int> Check(const CommandContext& context);
Result<int> Simulate(const CommandContext& context);
Result<int> Vars(const CommandContext& context);
Result<int> ExitCodes(const CommandContext& context);
Result<int> Version(const CommandContext& context);
}  // namespace commands

}  // namespace hetrun::launcher

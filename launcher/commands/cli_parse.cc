#include "commands/cli_parse.h"

namespace hetrun::launcher {

Result<cxxopts::ParseResult> ParseSubcommandOptions(cxxopts::Options& options,
                                                    const std::vector<std::string>& args,
                                                    std::vector<std::string>* rest) {
  std::vector<std::string> own;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") break;
    own.push_back(args[i]);
  }
  if (rest != nullptr) {
    rest->clear();
    if (i < args.size()) rest->assign(args.begin() + static_cast<long>(i) + 1, args.end());
  } else if (i < args.size()) {
    return UsageError("unexpected '--': " + options.program() + " takes no command");
  }
  std::vector<const char*> argv;
  std::string program = options.program();
  argv.push_back(program.c_str());
  for (const std::string& arg : own) argv.push_back(arg.c_str());
  try {
    return options.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(options.program() + ": " + e.what());
  }
}

Result<std::optional<cxxopts::ParseResult>> ParseOptionsOnly(
    cxxopts::Options& options, const std::vector<std::string>& args, std::ostream& out,
    const std::vector<std::string>& help_groups) {
  HETRUN_ASSIGN_OR_RETURN(cxxopts::ParseResult parsed, ParseSubcommandOptions(options, args));
  if (parsed.count("help")) {
    out << (help_groups.empty() ? options.help() : options.help(help_groups));
    return std::optional<cxxopts::ParseResult>();
  }
  if (!parsed.unmatched().empty()) {
    return UsageError(options.program() + " takes no arguments, got '" + parsed.unmatched()[0] +
                      "'");
  }
  return std::optional<cxxopts::ParseResult>(std::move(parsed));
}

}  // namespace hetrun::launcher

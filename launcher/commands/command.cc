#include "commands/command.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/nearest_name.h"
#include "hetrun/base/shown_text.h"
#include "hetrun/base/version.h"

namespace hetrun::launcher {
const Subcommand* FindSubcommand(std::string_view name) {
  for (const Subcommand& sub : Subcommands()) {
    if (sub.name == name) return &sub;
  }
  return nullptr;
}

std::string_view SuggestSubcommand(std::string_view name) {
  std::vector<std::string> names;
  for (const Subcommand& sub : Subcommands()) names.emplace_back(sub.name);
  std::string best = NearestName(name, names, 2);
  for (const Subcommand& sub : Subcommands()) {
    if (sub.name == best) return sub.name;
  }
  return {};
}

std::string MainHelp() {
  std::ostringstream out;
  out << "hetrun " HETRUN_VERSION_STRING
         " - launcher and runtime for training jobs on mixed-generation GPU clusters\n\n"
         "Usage:\n"
         "  hetrun [GLOBAL OPTIONS] SUBCOMMAND [OPTIONS] [ARGS...]\n"
         "  hetrun SUBCOMMAND --help        options of one subcommand\n\n"
         "Subcommands:\n";
  for (const Subcommand& sub : Subcommands()) {
    std::string name(sub.name);
    out << "  " << name << std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') << sub.summary
        << "\n";
  }
  out << "\nGlobal options (anywhere before a lone --):\n"
         "  --log-format text|json   hetrun's lines as 'TIME [hetrun node N rank R] ...' (worker\n"
         "                           lines untouched) or JSON objects (worker lines wrapped as\n"
         "                           {\"rank\",\"stream\",\"msg\"})\n"
         "  --log-level LEVEL        trace, debug, info, warn, error or off\n"
         "  -h, --help               this text\n"
         "  --version                print the version\n\n"
         "Exit codes (code, suggested Volcano action, meaning; see hetrun exit-codes --help):\n"
      << ExitCodeText()
      << "\n"
         "Environment variables:\n"
      << EnvVarTableText();
  return out.str();
}

Result<int> Dispatch(const std::vector<std::string>& args, const Environment& env,
                     std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") {
      if (const Subcommand* sub = FindSubcommand(args[1])) {
        CommandContext context{{"--help"}, env, out, err};
        return sub->run(context);
      }
    }
    out << MainHelp();
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    out << "hetrun " HETRUN_VERSION_STRING "\n";
    return kExitOk;
  }
  const Subcommand* sub = FindSubcommand(args[0]);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == nullptr) {
    // `run` is the default subcommand: `hetrun --nproc-per-node 2 -- cmd` means `hetrun run ...`.
    const Subcommand* run = FindSubcommand("run");
    // As torchrun: `hetrun train.py ARGS` and `hetrun ./prog` run too (a .py file or a path).
    const std::string& first = args[0];
    bool program = first.ends_with(".py") || first.find('/') != std::string::npos;
    if (run != nullptr && (first.rfind("-", 0) == 0 || program)) {
      sub = run;
      rest = args;
    } else {
      std::string message = "unknown subcommand '" + ShownText(args[0], 64) + "'";
      std::string_view suggestion = SuggestSubcommand(args[0]);
      if (!suggestion.empty()) message += " (did you mean '" + std::string(suggestion) + "'?)";
      message += "; see hetrun --help";
      return UsageError(message);
    }
  }
  CommandContext context{std::move(rest), env, out, err};
  return sub->run(context);
}

}  // namespace hetrun::launcher

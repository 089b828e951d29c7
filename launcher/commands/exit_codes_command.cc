// `hetrun exit-codes [--markdown] [--json] [--restarts --markdown]`: hetrun's exit codes, what they
// mean and the Volcano action each suggests, from the one table
// (runtime/include/hetrun/base/exit_codes.def); with --restarts, what each code does under each
// scheduler and Kubernetes version (hetrun/plan/restart_rules.h). docs/reference/exit-codes.md's
// tables are `hetrun exit-codes --markdown` and `hetrun exit-codes --restarts --markdown`.
#include <cxxopts.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/plan/restart_rules.h"

namespace hetrun::launcher {

Result<int> commands::ExitCodes(const CommandContext& context) {
  cxxopts::Options options("hetrun exit-codes",
                           "List hetrun's exit codes and the Volcano policies keyed on them.");
  options.add_options()("markdown", "print the docs' Markdown table")(
      "json", "print {\"exit_codes\": [...], \"policies\": [...]} as JSON")(
      "restarts",
      "with --markdown: what each code does under Volcano and JobSet by Kubernetes version "
      "(restarts in place from 1.35)")("h,help", "this text");
  HETRUN_ASSIGN_OR_RETURN(std::optional<cxxopts::ParseResult> given,
                          ParseOptionsOnly(options, context.args, context.out));
  if (!given) return kExitOk;  // --help
  const cxxopts::ParseResult& parsed = *given;
  if (parsed.count("markdown") && parsed.count("json")) {
    return UsageError("hetrun exit-codes: --markdown and --json exclude each other");
  }
  if (parsed.count("restarts") && !parsed.count("markdown")) {
    return UsageError("hetrun exit-codes: --restarts goes with --markdown");
  }
  if (parsed.count("restarts")) {
    context.out << plan::RestartTableMarkdown();
  } else if (parsed.count("markdown")) {
    context.out << ExitCodeMarkdown();
  } else if (parsed.count("json")) {
    context.out << ExitCodeJson();
  } else {
    context.out << ExitCodeText();
  }
  return kExitOk;
}

}  // namespace hetrun::launcher

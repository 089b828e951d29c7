// `hetrun vars [--markdown] [--set]`: every environment variable hetrun reads or writes, with
// the value it has here. docs/reference/environment.md's table is `hetrun vars
// --markdown`.
#include <cxxopts.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {

Result<int> commands::Vars(const CommandContext& context) {
  cxxopts::Options options("hetrun vars",
                           "List every environment variable hetrun reads or writes.");
  options.add_options()("markdown", "print the docs' Markdown table")(
      "set", "only variables set in this environment, with their values")("h,help", "this text");
  HETRUN_ASSIGN_OR_RETURN(std::optional<cxxopts::ParseResult> given,
                          ParseOptionsOnly(options, context.args, context.out));
  if (!given) return kExitOk;  // --help
  const cxxopts::ParseResult& parsed = *given;
  if (parsed.count("markdown")) {
    context.out << EnvVarTableMarkdown();
    return kExitOk;
  }
  if (parsed.count("set")) {
    for (const auto& [name, value] : context.env.all()) {
      const EnvVarSpec* spec = FindEnvVarSpec(name);
      if (spec == nullptr) continue;
      context.out << name << "=" << value << "    (" << EnvCategoryName(spec->category) << ")\n";
    }
    return kExitOk;
  }
  context.out << EnvVarTableText();
  return kExitOk;
}

}  // namespace hetrun::launcher

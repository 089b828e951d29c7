// `hetrun version [--json]`: the version and what this build contains.
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/base/version.h"

namespace hetrun::launcher {

Result<int> commands::Version(const CommandContext& context) {
  cxxopts::Options options("hetrun version", "Print hetrun's version and build features.");
  options.add_options()("json", "print JSON")("h,help", "this text");
  HETRUN_ASSIGN_OR_RETURN(cxxopts::ParseResult parsed,
                          ParseSubcommandOptions(options, context.args));
  if (parsed.count("help")) {
    context.out << options.help();
    return kExitOk;
  }
  nlohmann::json info = {
      {"version", HETRUN_VERSION_STRING},
      {"cuda_kernels", HETRUN_BUILD_CUDA_ARCHITECTURES},
      {"compiler", __VERSION__},
  };
  if (parsed.count("json")) {
    context.out << info.dump(2) << "\n";
  } else {
    context.out << "hetrun " << HETRUN_VERSION_STRING << "\n"
                << "cuda kernels: "
                << (std::string_view(HETRUN_BUILD_CUDA_ARCHITECTURES).empty()
                        ? "not built (no CUDA toolkit at build time)"
                        : HETRUN_BUILD_CUDA_ARCHITECTURES)
                << "\n"
                << "compiler: " << __VERSION__ << "\n";
  }
  return kExitOk;
}

}  // namespace hetrun::launcher

// hetrun's entry point: the only place in hetrun that exits. It reads the environment once,
// sets up logging, runs the subcommand and maps its Status to the exit-code contract.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands/cli_global_options.h"
#include "commands/command.h"
#include "hetrun/base/env.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/base/logging.h"
#include "hetrun/base/unknown_env_vars.h"
#include "rendezvous/rendezvous_api.h"
#include "supervise/report/termination_log.h"

namespace {

int Main(int argc, char** argv) {
  using namespace hetrun;
  using namespace hetrun::launcher;

  Environment env = Environment::FromProcess();
  std::vector<std::string> args(argv + 1, argv + argc);

  // Logging comes first so every later error is reported the same way.
  LogOptions log_options;
  Status setup = Status::Ok();
  if (auto from_env = LogOptionsFromEnv(env); from_env.ok()) {
    log_options = *from_env;
  } else {
    setup = from_env.status();
  }
  auto global = ExtractCliGlobalOptions(&args);
  if (global.ok()) {
    if (global->log_format) log_options.format = *global->log_format;
    if (global->log_level) log_options.level = *global->log_level;
  } else if (setup.ok()) {
    setup = global.status();
  }
  if (Status configured = ConfigureLogging(log_options); !configured.ok()) {
    (void)ConfigureLogging(LogOptions{});
    if (setup.ok()) setup = Status(StatusCode::kUsage, configured.message());
  }

  // A misspelled HETRUN_* setting would otherwise be ignored without a word.
  for (const std::string& unknown : UnknownHetrunVariables(env)) spdlog::warn("{}", unknown);

  Result<int> result = setup.ok() ? Dispatch(args, env, std::cout, std::cerr) : Result<int>(setup);
  std::cout.flush();
  if (result.ok()) return *result;

  const Status& status = result.status();
  int code = ExitCodeFor(status);
  spdlog::error("{}", status.message());
  std::string reason = "hetrun exited with " + std::to_string(code) + " (" +
                       std::string(StatusCodeName(status.code())) + "): " + status.message() + "\n";
  if (Status logged = WriteTerminationLog(env, reason); !logged.ok()) {
    spdlog::warn("{}", logged.message());
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  int code = Main(argc, argv);
  if (hetrun::launcher::HasAbandonedThreads()) {
    // A thread is still inside the store library (a frozen peer, a connect cut short): running
    // the exit handlers beside it could crash or hang the exit and replace the exit code.
    std::cout.flush();
    std::cerr.flush();
    spdlog::shutdown();
    std::fflush(nullptr);
    _exit(code);
  }
  return code;
}

#include "commands/run/worker_command.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "hetrun/base/shown_text.h"
#include "supervise/child_process.h"
#include "supervise/report/termination_log.h"

namespace hetrun::launcher {
namespace {

bool NamedPython(const std::string& program) {
  return std::filesystem::path(program).filename().string().rfind("python", 0) == 0;
}

/// The script a Python worker runs, or "" when there is none to check (-m, -c, a flag first).
std::string ScriptOf(const std::vector<std::string>& command, ProgramKind kind) {
  if (command.size() < 2) return "";
  if (kind == ProgramKind::kPythonScript) return command[1];
  if (kind == ProgramKind::kExec && NamedPython(command[0]) && command[1].ends_with(".py") &&
      command[1][0] != '-') {
    return command[1];
  }
  return "";
}

std::string Here() {
  std::error_code error;
  std::filesystem::path cwd = std::filesystem::current_path(error);
  return error ? std::string("the current folder") : cwd.string();
}

Status CheckScript(const std::string& script) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(script, error);
  if (!std::filesystem::exists(status)) {
    return NotFoundError("the worker script '" + ShownText(script, 256) +
                         "' does not exist (relative to " + Here() + "); no worker started");
  }
  if (std::filesystem::is_directory(status)) {
    return FailedPreconditionError("the worker script '" + ShownText(script, 256) +
                                   "' is a folder; no worker started");
  }
  return Status::Ok();
}

}  // namespace

Status CheckWorkerCommand(const std::vector<std::string>& command, ProgramKind kind,
                          const Environment& env) {
  if (command.empty()) return NotFoundError("no worker command");
  const bool python_worker = kind != ProgramKind::kExec;
  // The workers inherit hetrun's PATH (supervise/child_process.h resolves it the same way).
  auto path = env.all().find("PATH");
  Result<std::string> program =
      ResolveCommand(command[0], path == env.all().end() ? std::string() : path->second);
  if (program.ok() && command[0].find('/') != std::string::npos &&
      ::access(command[0].c_str(), X_OK) != 0) {
    const bool exists = ::access(command[0].c_str(), F_OK) == 0;
    program = Status(exists ? StatusCode::kFailedPrecondition : StatusCode::kNotFound,
                     "'" + ShownText(command[0], 256) +
                         (exists ? "' is not an executable file" : "' does not exist"));
  }
  if (!program.ok()) {
    if (!python_worker) {
      return Status(program.status().code(),
                    "the worker command: " + program.status().message() + "; no worker started");
    }
    return Status(program.status().code(),
                  "the workers' Python: " + program.status().message() +
                      "; name an interpreter that has torch with --python or HETRUN_PYTHON "
                      "(e.g. --python .venv/bin/python); no worker started");
  }
  const std::string script = ScriptOf(command, kind);
  return script.empty() ? Status::Ok() : CheckScript(script);
}

int RefuseWorkerCommand(const Status& status, const Environment& env) {
  const int code = ExitCodeForSpawnError(status);
  spdlog::error("{}", status.message());
  const std::string reason =
      "hetrun exited with " + std::to_string(code) + ": " + status.message() + "\n";
  if (Status logged = WriteTerminationLog(env, reason); !logged.ok()) {
    spdlog::warn("{}", logged.message());
  }
  return code;
}

}  // namespace hetrun::launcher

#include "preflight/torch_location.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "preflight/child_output.h"
#include "preflight/default_python.h"

extern char** environ;

namespace hetrun::launcher {

Result<std::string> FindTorchPackageDir(const std::string& python,
                                        std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {python, "-c",
                                   "import importlib.util, os, sys\n"
                                   "spec = importlib.util.find_spec('torch')\n"
                                   "sys.exit(1) if spec is None or spec.origin is None else "
                                   "print(os.path.dirname(spec.origin))"};
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2", "torch location", errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, python.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    return FailedPreconditionError("cannot run " + python +
                                   " to find torch: " + std::strerror(spawned) +
                                   " (name an interpreter that has torch with --python or "
                                   "HETRUN_PYTHON)");
  }
  HETRUN_ASSIGN_OR_RETURN(ChildOutput child, CollectChildOutput(fds[0], pid, timeout, python));
  if (child.timed_out) {
    return DeadlineExceededError(python + " looking for torch did not finish in " +
                                 std::to_string(timeout.count() / 1000) + " s");
  }
  const int status = child.wait_status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return FailedPreconditionError(python + " finds no torch package (exit status " +
                                   std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                   ")");
  }
  std::string text = std::move(child.text);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t last_line = text.rfind('\n');
  if (last_line != std::string::npos) text = text.substr(last_line + 1);
  if (text.empty()) return FailedPreconditionError(python + " printed no torch location");
  return text;
}

Result<std::string> FindTorchLibDir(const Environment& env, std::chrono::milliseconds timeout) {
  Result<std::string> found =
      FindTorchPackageDir(PythonOrDefault(env.Get("HETRUN_PYTHON")), timeout);
  if (!found.ok() && found.status().code() == StatusCode::kFailedPrecondition) {
    return FailedPreconditionError(found.status().message() +
                                   "; set HETRUN_PYTHON or pass --torch-lib DIR");
  }
  HETRUN_ASSIGN_OR_RETURN(std::string text, std::move(found));
  const std::string lib = (std::filesystem::path(text) / "lib").string();
  std::error_code error;
  if (text.empty() || !std::filesystem::is_directory(lib, error)) {
    return FailedPreconditionError("torch at '" + text + "' has no lib/ directory");
  }
  return lib;
}

}  // namespace hetrun::launcher

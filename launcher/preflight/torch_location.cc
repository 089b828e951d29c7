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

extern char** environ;

namespace hetrun::launcher {

Result<std::string> FindTorchLibDir(const Environment& env, std::chrono::milliseconds timeout) {
  const std::string python = env.Get("HETRUN_PYTHON").value_or("python3");
  std::vector<std::string> argv = {python, "-c",
                                   "import torch, os; print(os.path.dirname(torch.__file__))"};
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
    return FailedPreconditionError("cannot run " + python + " (HETRUN_PYTHON) to find torch: " +
                                   std::strerror(spawned) + "; pass --torch-lib DIR instead");
  }
  HETRUN_ASSIGN_OR_RETURN(ChildOutput child, CollectChildOutput(fds[0], pid, timeout, python));
  if (child.timed_out) {
    return DeadlineExceededError(python + " -c 'import torch' did not finish in " +
                                 std::to_string(timeout.count() / 1000) + " s");
  }
  const int status = child.wait_status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return FailedPreconditionError(python + " cannot import torch (exit status " +
                                   std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                   "); set HETRUN_PYTHON or pass --torch-lib DIR");
  }
  std::string text = std::move(child.text);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t last_line = text.rfind('\n');
  if (last_line != std::string::npos) text = text.substr(last_line + 1);
  const std::string lib = (std::filesystem::path(text) / "lib").string();
  std::error_code error;
  if (text.empty() || !std::filesystem::is_directory(lib, error)) {
    return FailedPreconditionError("torch at '" + text + "' has no lib/ directory");
  }
  return lib;
}

}  // namespace hetrun::launcher

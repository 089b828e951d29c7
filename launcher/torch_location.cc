#include "torch_location.h"

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
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoError("waitpid", python, errno);
  }
  if (timed_out) {
    return DeadlineExceededError(python + " -c 'import torch' did not finish in " +
                                 std::to_string(timeout.count() / 1000) + " s");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return FailedPreconditionError(python + " cannot import torch (exit status " +
                                   std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                   "); set HETRUN_PYTHON or pass --torch-lib DIR");
  }
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

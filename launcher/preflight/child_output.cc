#include "preflight/child_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace hetrun::launcher {

Result<ChildOutput> CollectChildOutput(int fd, pid_t pid, std::chrono::milliseconds timeout,
                                       std::string_view what) {
  ChildOutput output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      output.timed_out = true;
      break;
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready <= 0) continue;  // EINTR or a spurious wake-up: the deadline check decides
    char buffer[4096];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (output.timed_out) kill(pid, SIGKILL);
  while (waitpid(pid, &output.wait_status, 0) < 0) {
    if (errno != EINTR) return ErrnoError("waitpid", what, errno);
  }
  return output;
}

void WriteAllAndExit(int fd, std::string_view text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    written += static_cast<size_t>(n);
  }
  _exit(0);
}

Result<std::string> OutputOfForkedChild(std::string_view what, std::chrono::milliseconds timeout,
                                        const std::function<std::string()>& produce,
                                        std::string_view timeout_hint) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2", what, errno);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return ErrnoError("fork", what, err);
  }
  if (pid == 0) {
    close(fds[0]);
    WriteAllAndExit(fds[1], produce());
  }
  close(fds[1]);
  HETRUN_ASSIGN_OR_RETURN(ChildOutput child, CollectChildOutput(fds[0], pid, timeout, what));
  if (child.timed_out) {
    return DeadlineExceededError(std::string(what) + " did not finish in " +
                                 std::to_string(timeout.count() / 1000) + " s" +
                                 std::string(timeout_hint));
  }
  if (!WIFEXITED(child.wait_status) || WEXITSTATUS(child.wait_status) != 0) {
    return InternalError(std::string(what) + " child failed (wait status " +
                         std::to_string(child.wait_status) + ")");
  }
  return std::move(child.text);
}

}  // namespace hetrun::launcher

#include "child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exit_code.h"

namespace hetrun::launcher {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Writes all of `data` to `fd` from the child; async-signal-safe.
void WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<size_t>(n);
  }
}

Status ExecError(const std::string& path, int err) {
  std::string message = "exec(" + path + "): " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return NotFoundError(message);
  if (err == EACCES || err == ENOEXEC || err == EPERM || err == EISDIR || err == ETXTBSY ||
      err == ELOOP) {
    return FailedPreconditionError(message);
  }
  return InternalError(message);
}

}  // namespace

Result<std::string> ResolveCommand(const std::string& name, const std::string& path_list) {
  if (name.empty()) return NotFoundError("empty command");
  if (name.find('/') != std::string::npos) return name;
  std::string list = path_list.empty() ? kDefaultPath : path_list;
  std::string not_executable;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    if (not_executable.empty() && ::access(candidate.c_str(), F_OK) == 0) {
      not_executable = candidate;
    }
    start = end + 1;
  }
  if (!not_executable.empty()) {
    return FailedPreconditionError("command '" + name + "' found at " + not_executable +
                                   " but it is not an executable file");
  }
  return NotFoundError("command '" + name + "' not found in PATH=" + list);
}

Result<pid_t> SpawnProcess(const SpawnSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("no command to run");
  auto path_it = spec.env.find("PATH");
  HETRUN_ASSIGN_OR_RETURN(
      std::string program,
      ResolveCommand(spec.argv[0], path_it == spec.env.end() ? std::string() : path_it->second));

  // Everything the child needs is built before fork: the child only makes async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  env_strings.reserve(spec.env.size());
  for (const auto& [name, value] : spec.env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  // The child writes exec's errno here; a successful exec closes it (O_CLOEXEC) with no data.
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return ErrnoError("pipe2", "exec error pipe", errno);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(error_pipe[0]);
    ::close(error_pipe[1]);
    return ErrnoError("fork", spec.argv[0], err);
  }
  if (pid == 0) {
    ::close(error_pipe[0]);
    int err = 0;
    // Own process group: signals reach the worker and its data-loader children together, and a
    // terminal's Ctrl-C reaches only hetrun, which forwards it once.
    if (::setpgid(0, 0) != 0) err = errno;
    // Die with hetrun. If hetrun is already gone the signal was never armed: exit now.
    if (err == 0 && ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) err = errno;
    if (err == 0 && ::getppid() != parent) ::_exit(kExitInternal);
    if (err == 0 && spec.stdout_fd >= 0 && ::dup2(spec.stdout_fd, STDOUT_FILENO) < 0) err = errno;
    if (err == 0 && spec.stderr_fd >= 0 && ::dup2(spec.stderr_fd, STDERR_FILENO) < 0) err = errno;
    if (err == 0) {
      if (spec.signals != nullptr) spec.signals->RestoreInChild();
      ::execve(program.c_str(), argv.data(), envp.data());
      err = errno;
    }
    WriteAll(error_pipe[1], &err, sizeof(err));
    ::_exit(err == ENOENT ? kExitNotFound : kExitNotExecutable);
  }
  ::close(error_pipe[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ExecError(program, child_errno);
  }
  return pid;
}

int ExitCodeForSpawnError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      return kExitNotFound;
    case StatusCode::kFailedPrecondition:
      return kExitNotExecutable;
    default:
      return kExitInternal;
  }
}

}  // namespace hetrun::launcher

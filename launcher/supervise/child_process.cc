#include "supervise/child_process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// The step of the child's start-up that failed (reported through the error pipe).
enum class ChildStep : int { kSetpgid, kPrctl, kDup2, kAffinity, kExec };

// A failed step before exec is hetrun's failure (exit 70), whatever the errno.
Status ChildStepError(const std::string& call, const std::string& what, int err) {
  return InternalError(call + "(" + what + ") in the worker before exec: " + std::strerror(err));
}

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

  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return InvalidArgumentError("CPU " + std::to_string(cpu) + " is outside 0.." +
                                  std::to_string(CPU_SETSIZE - 1));
    }
    CPU_SET(cpu, &cpus);
  }
  const bool bind = !spec.cpus.empty();

  // The child writes {step, errno} here when a step before exec, or exec itself, fails; a
  // successful exec closes it (O_CLOEXEC) with no data.
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
    ChildStep step = ChildStep::kSetpgid;
    // Own process group: signals reach the worker and its data-loader children together, and a
    // terminal's Ctrl-C reaches only hetrun, which forwards it once.
    if (::setpgid(0, 0) != 0) err = errno;
    // Die with hetrun. If hetrun is already gone the signal was never armed: exit now.
    if (err == 0 && (step = ChildStep::kPrctl, ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0))
      err = errno;
    if (err == 0 && ::getppid() != parent) ::_exit(kExitInternal);
    if (err == 0 && spec.stdout_fd >= 0 &&
        (step = ChildStep::kDup2, ::dup2(spec.stdout_fd, STDOUT_FILENO) < 0)) {
      err = errno;
    }
    if (err == 0 && spec.stderr_fd >= 0 &&
        (step = ChildStep::kDup2, ::dup2(spec.stderr_fd, STDERR_FILENO) < 0)) {
      err = errno;
    }
    if (err == 0 && bind &&
        (step = ChildStep::kAffinity, ::sched_setaffinity(0, sizeof(cpus), &cpus) != 0)) {
      err = errno;
    }
    if (err == 0) {
      if (spec.signals != nullptr) spec.signals->RestoreInChild();
      step = ChildStep::kExec;
      ::execve(program.c_str(), argv.data(), envp.data());
      err = errno;
    }
    const int report[2] = {static_cast<int>(step), err};
    WriteAll(error_pipe[1], report, sizeof(report));
    ::_exit(step != ChildStep::kExec ? kExitInternal
            : err == ENOENT          ? kExitNotFound
                                     : kExitNotExecutable);
  }
  ::close(error_pipe[1]);
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(error_pipe[0], report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(report))) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    switch (static_cast<ChildStep>(report[0])) {
      case ChildStep::kExec:
        return ExecError(program, report[1]);
      case ChildStep::kSetpgid:
        return ChildStepError("setpgid", "worker " + program, report[1]);
      case ChildStep::kPrctl:
        return ChildStepError("prctl(PR_SET_PDEATHSIG)", "worker " + program, report[1]);
      case ChildStep::kDup2:
        return ChildStepError("dup2", "worker " + program + " output", report[1]);
      case ChildStep::kAffinity:
        return ChildStepError("sched_setaffinity", "worker " + program, report[1]);
    }
    return InternalError("worker " + program + ": unknown start-up failure");
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

#include "supervise/child_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"

namespace hetrun::launcher {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// The step of the child's start-up that failed (reported through the error pipe).
enum class ChildStep : int { kSetpgid, kPrctl, kDup2, kAffinity, kFds, kExec };

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

namespace {

// Everything the child needs, built before fork: the child only makes async-signal-safe calls.
struct ExecPlan {
  std::string program;
  std::vector<char*> argv;
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  cpu_set_t cpus;
  bool bind = false;
  std::vector<int> keep_fds;  ///< inherited fds >= 3 the worker keeps (PMI_FD)
  std::vector<int> open_fds;  ///< fds open before fork (the fallback when close_range fails)
};

// The descriptors MPI and Slurm hand down on purpose: PMI_FD (MPICH's hydra, Slurm's PMI-1/2).
std::vector<int> KeptFds(const std::map<std::string, std::string>& env) {
  std::vector<int> keep;
  auto it = env.find("PMI_FD");
  if (it == env.end()) return keep;
  Result<int64_t> fd = ParseIntInRange(it->second, 3, 1 << 20);
  if (fd.ok()) keep.push_back(static_cast<int>(*fd));
  return keep;
}

std::vector<int> OpenFds() {
  std::vector<int> fds;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    Result<int64_t> fd = ParseInt(entry.path().filename().string());
    if (fd.ok() && *fd >= 3) fds.push_back(static_cast<int>(*fd));
  }
  return fds;
}

Result<std::unique_ptr<ExecPlan>> BuildExecPlan(const SpawnSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("no command to run");
  auto plan = std::make_unique<ExecPlan>();
  auto path_it = spec.env.find("PATH");
  HETRUN_ASSIGN_OR_RETURN(
      plan->program,
      ResolveCommand(spec.argv[0], path_it == spec.env.end() ? std::string() : path_it->second));
  for (const std::string& arg : spec.argv) plan->argv.push_back(const_cast<char*>(arg.c_str()));
  plan->argv.push_back(nullptr);
  plan->env_strings.reserve(spec.env.size());
  for (const auto& [name, value] : spec.env) plan->env_strings.push_back(name + "=" + value);
  for (std::string& entry : plan->env_strings) plan->envp.push_back(entry.data());
  plan->envp.push_back(nullptr);
  CPU_ZERO(&plan->cpus);
  for (int cpu : spec.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return InvalidArgumentError("CPU " + std::to_string(cpu) + " is outside 0.." +
                                  std::to_string(CPU_SETSIZE - 1));
    }
    CPU_SET(cpu, &plan->cpus);
  }
  plan->bind = !spec.cpus.empty();
  plan->keep_fds = KeptFds(spec.env);
  plan->open_fds = OpenFds();
  return plan;
}

// Every inherited descriptor >= 3 gets FD_CLOEXEC (exec closes it), but the ones kept on
// purpose. close_range marks them all atomically; without it, the list read before fork.
bool CloseInheritedFds(const ExecPlan& plan) {
  if (::close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd : plan.open_fds) (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  for (int fd : plan.keep_fds) {
    if (::fcntl(fd, F_SETFD, 0) != 0 && errno != EBADF) return false;
  }
  return true;
}

// Every signal back to its default disposition (an inherited SIG_IGN would otherwise survive
// exec and, say, make the worker deaf to the SIGINT hetrun forwards) and nothing blocked.
void ResetSignals() {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal = 1; signal < NSIG; ++signal) {
    if (signal == SIGKILL || signal == SIGSTOP) continue;
    (void)::sigaction(signal, &default_action, nullptr);  // EINVAL for libc-reserved numbers
  }
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The child between fork and exec: async-signal-safe calls only. Reports {step, errno} on
// `report_fd` when a step fails.
[[noreturn]] void RunChild(const SpawnSpec& spec, const ExecPlan& plan, pid_t parent,
                           int report_fd) {
  int err = 0;
  ChildStep step = ChildStep::kSetpgid;
  // Own process group: signals reach the worker and its data-loader children together, and a
  // terminal's Ctrl-C reaches only hetrun, which forwards it once.
  if (::setpgid(0, 0) != 0) err = errno;
  // Die with hetrun. If hetrun is already gone the signal was never armed: exit now.
  if (err == 0 && (step = ChildStep::kPrctl, ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)) err = errno;
  if (err == 0 && ::getppid() != parent) ::_exit(kExitInternal);
  if (err == 0 && spec.stdout_fd >= 0 &&
      (step = ChildStep::kDup2, ::dup2(spec.stdout_fd, STDOUT_FILENO) < 0)) {
    err = errno;
  }
  if (err == 0 && spec.stderr_fd >= 0 &&
      (step = ChildStep::kDup2, ::dup2(spec.stderr_fd, STDERR_FILENO) < 0)) {
    err = errno;
  }
  if (err == 0 && plan.bind &&
      (step = ChildStep::kAffinity, ::sched_setaffinity(0, sizeof(plan.cpus), &plan.cpus) != 0)) {
    err = errno;
  }
  if (err == 0 && (step = ChildStep::kFds, !CloseInheritedFds(plan))) err = errno;
  if (err == 0) {
    ResetSignals();
    step = ChildStep::kExec;
    ::execve(plan.program.c_str(), plan.argv.data(), plan.envp.data());
    err = errno;
  }
  const int report[2] = {static_cast<int>(step), err};
  WriteAll(report_fd, report, sizeof(report));
  ::_exit(step != ChildStep::kExec ? kExitInternal
          : err == ENOENT          ? kExitNotFound
                                   : kExitNotExecutable);
}

// Waits for the child's exec report: none (the pipe closed by a successful exec) -> its pid.
Result<pid_t> AwaitExecReport(pid_t pid, int report_fd, const std::string& program) {
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report_fd, report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  ::close(report_fd);
  if (n != static_cast<ssize_t>(sizeof(report))) return pid;
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
    case ChildStep::kFds:
      return ChildStepError("fcntl(F_SETFD)", "PMI_FD of worker " + program, report[1]);
  }
  return InternalError("worker " + program + ": unknown start-up failure");
}

}  // namespace

Result<pid_t> SpawnProcess(const SpawnSpec& spec) {
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<ExecPlan> plan, BuildExecPlan(spec));
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
    RunChild(spec, *plan, parent, error_pipe[1]);
  }
  ::close(error_pipe[1]);
  return AwaitExecReport(pid, error_pipe[0], plan->program);
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

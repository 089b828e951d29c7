#include "supervise/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"
#include "supervise/child_process.h"
#include "supervise/output_tee.h"
#include "supervise/signal_set.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// After SIGKILL, how long to wait for the kernel to deliver it before giving up (processes in
/// uninterruptible sleep, e.g. stuck in a driver call, cannot be reaped sooner).
constexpr milliseconds kAfterKillWait{5'000};

struct Worker {
  WorkerSpec spec;
  pid_t pid = -1;  ///< also its process group id; -1 when it never started
  bool running = false;
  UniqueFd out_pipe;
  UniqueFd err_pipe;
  UniqueFd log;
  std::unique_ptr<OutputTee> out;
  std::unique_ptr<OutputTee> err;
  std::string heartbeat;
  std::chrono::system_clock::time_point started;
};

/// The pids of this process's direct children (orphans re-parented to a subreaper included).
/// Best effort: empty when /proc does not expose the list.
std::vector<pid_t> DirectChildren() {
  std::vector<pid_t> children;
  std::ifstream in("/proc/self/task/" + std::to_string(::getpid()) + "/children");
  pid_t pid;
  while (in >> pid) children.push_back(pid);
  return children;
}

Result<UniqueFd> OpenLog(const std::string& dir, int rank, int restart_count) {
  std::string name = restart_count == 0 ? "rank_" + std::to_string(rank) + ".log"
                                        : "rank_" + std::to_string(rank) + ".restart_" +
                                              std::to_string(restart_count) + ".log";
  std::string path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open", path, errno).WithContext("--log-dir");
  return UniqueFd(fd);
}

// The temporary folder of heartbeat files, removed with everything in it.
class HeartbeatDir {
 public:
  static Result<std::unique_ptr<HeartbeatDir>> Create() {
    const char* tmp = std::getenv("TMPDIR");  // NOLINT: a path for our own scratch files
    std::string pattern =
        std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/hetrun-heartbeat-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return ErrnoError("mkdtemp", pattern, errno);
    return std::unique_ptr<HeartbeatDir>(new HeartbeatDir(pattern));
  }
  ~HeartbeatDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  /// Creates (or truncates) the file of `local_rank`: its mtime is the start of the clock.
  Result<std::string> Reset(int local_rank) const {
    std::string file = path_ + "/rank_" + std::to_string(local_rank);
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("open", file, errno).WithContext("heartbeat file");
    ::close(fd);
    if (::utimensat(AT_FDCWD, file.c_str(), nullptr, 0) != 0) {
      return ErrnoError("utimensat", file, errno).WithContext("heartbeat file");
    }
    return file;
  }

 private:
  explicit HeartbeatDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

class Supervisor {
 public:
  Supervisor(const SupervisorOptions& options, SignalSet& signals, bool reaper,
             const HeartbeatDir* heartbeats)
      : options_(options), signals_(signals), reaper_(reaper), heartbeats_(heartbeats) {}

  /// A shutdown signal that arrived between attempts (0 = none).
  Result<int> PendingShutdownSignal();

  /// Runs one attempt to the end; nullopt when every worker succeeded.
  Result<std::optional<WorkerFailure>> RunAttempt(std::vector<WorkerSpec> specs, int restart_count);

 private:
  Status Spawn(Worker& worker, int restart_count);
  Status HandleSignals();
  void HandleSignal(int signal);
  void Reap();
  void OnWorkerExit(Worker& worker, int wait_status);
  void BeginShutdown(int signal);
  void SignalGroups(int signal, bool include_strays);
  void CheckHeartbeats();
  void DrainPipe(UniqueFd& pipe, OutputTee& tee, bool until_eof);
  int PollTimeoutMs() const;
  bool AnyRunning() const;
  Worker* FindWorker(pid_t pid);

  const SupervisorOptions& options_;
  SignalSet& signals_;
  bool reaper_;
  const HeartbeatDir* heartbeats_;

  std::vector<Worker> workers_;
  std::optional<WorkerFailure> failure_;
  int received_signal_ = 0;  ///< the shutdown signal hetrun received, if any
  bool shutdown_ = false;    ///< SIGTERM (or the received signal) sent; deadline armed
  bool cleanup_ = false;     ///< every worker exited; leftovers are being stopped
  bool killed_ = false;      ///< SIGKILL sent
  bool no_children_ = false;
  Clock::time_point deadline_;
  Clock::time_point killed_at_;
  Clock::time_point next_heartbeat_check_;
};

Result<int> Supervisor::PendingShutdownSignal() {
  HETRUN_ASSIGN_OR_RETURN(std::vector<int> pending, signals_.ReadPending());
  for (int signal : pending) {
    if (IsShutdownSignal(signal)) return signal;
  }
  return 0;
}

Status Supervisor::Spawn(Worker& worker, int restart_count) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoError("pipe2", "worker stdout", errno);
  worker.out_pipe = UniqueFd(out[0]);
  UniqueFd out_write(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return ErrnoError("pipe2", "worker stderr", errno);
  worker.err_pipe = UniqueFd(err[0]);
  UniqueFd err_write(err[1]);
  for (int fd : {out[0], err[0]}) {
    if (::fcntl(fd, F_SETFL, O_NONBLOCK) != 0) return ErrnoError("fcntl", "O_NONBLOCK", errno);
  }
  if (!options_.log_dir.empty()) {
    HETRUN_ASSIGN_OR_RETURN(worker.log, OpenLog(options_.log_dir, worker.spec.rank, restart_count));
  }
  std::string prefix = options_.tee ? "[rank " + std::to_string(worker.spec.rank) + "] " : "";
  worker.out = std::make_unique<OutputTee>(options_.console_out, prefix, worker.log.get(), 0);
  worker.err = std::make_unique<OutputTee>(options_.console_err, prefix, worker.log.get(),
                                           options_.tail_lines);
  SpawnSpec spec{options_.command, worker.spec.env, out[1], err[1], &signals_, worker.spec.cpus};
  spec.env.erase("HETRUN_HEARTBEAT");
  if (heartbeats_ != nullptr) {
    HETRUN_ASSIGN_OR_RETURN(worker.heartbeat, heartbeats_->Reset(worker.spec.local_rank));
    spec.env["HETRUN_HEARTBEAT"] = worker.heartbeat;
  }
  worker.started = std::chrono::system_clock::now();
  HETRUN_ASSIGN_OR_RETURN(worker.pid, SpawnProcess(spec));
  worker.running = true;
  spdlog::debug("started rank {} (local rank {}) as pid {}", worker.spec.rank,
                worker.spec.local_rank, worker.pid);
  return Status::Ok();
}

Result<std::optional<WorkerFailure>> Supervisor::RunAttempt(std::vector<WorkerSpec> specs,
                                                            int restart_count) {
  workers_.clear();
  workers_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) workers_[i].spec = std::move(specs[i]);

  for (Worker& worker : workers_) {
    Status started = Spawn(worker, restart_count);
    if (started.ok()) continue;
    int code = ExitCodeForSpawnError(started);
    if (code == kExitInternal) {
      // hetrun itself is broken (no pipes, no fork): stop what runs and report the error.
      BeginShutdown(SIGTERM);
      SignalGroups(SIGKILL, true);
      Reap();
      return started;
    }
    WorkerFailure failure;
    failure.kind = WorkerFailure::Kind::kSpawn;
    failure.rank = worker.spec.rank;
    failure.local_rank = worker.spec.local_rank;
    failure.exit_code = code;
    failure.detail = started.message();
    spdlog::error("{}", FailureSummary(failure));
    failure_ = failure;
    BeginShutdown(SIGTERM);
    break;
  }

  while (true) {
    if (!AnyRunning()) {
      if (!cleanup_) {
        cleanup_ = true;
        if (!shutdown_) {
          // Success (or every worker already gone): nothing the workers started may outlive us.
          deadline_ = Clock::now() + options_.grace_period;
          SignalGroups(SIGTERM, true);
        }
      }
      if (no_children_ || !reaper_) break;
    }
    std::vector<pollfd> fds;
    fds.push_back({signals_.fd(), POLLIN, 0});
    std::vector<std::pair<UniqueFd*, OutputTee*>> pipes;
    for (Worker& worker : workers_) {
      for (auto [pipe, tee] : {std::pair{&worker.out_pipe, worker.out.get()},
                               std::pair{&worker.err_pipe, worker.err.get()}}) {
        if (!pipe->valid() || tee == nullptr) continue;
        fds.push_back({pipe->get(), POLLIN, 0});
        pipes.emplace_back(pipe, tee);
      }
    }
    int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs());
    if (ready < 0 && errno != EINTR) return ErrnoError("poll", "supervisor loop", errno);
    for (size_t i = 0; ready > 0 && i < pipes.size(); ++i) {
      if (fds[i + 1].revents != 0) DrainPipe(*pipes[i].first, *pipes[i].second, false);
    }
    HETRUN_RETURN_IF_ERROR(HandleSignals());
    Reap();
    Clock::time_point now = Clock::now();
    if ((shutdown_ || cleanup_) && !killed_ && now >= deadline_) {
      if (AnyRunning()) {
        spdlog::warn("grace period of {} over: sending SIGKILL to what still runs",
                     FormatDuration(options_.grace_period));
      }
      SignalGroups(SIGKILL, true);
      killed_ = true;
      killed_at_ = now;
    }
    if (killed_ && now >= killed_at_ + kAfterKillWait) {
      spdlog::error("processes survive SIGKILL after {}; giving up on them",
                    FormatDuration(kAfterKillWait));
      break;
    }
    CheckHeartbeats();
  }
  for (Worker& worker : workers_) {
    if (!worker.out || !worker.err) continue;  // never spawned (an earlier worker failed to start)
    DrainPipe(worker.out_pipe, *worker.out, true);
    DrainPipe(worker.err_pipe, *worker.err, true);
  }
  if (failure_) {
    for (const Worker& worker : workers_) {
      if (worker.spec.rank == failure_->rank && worker.err)
        failure_->stderr_tail = worker.err->Tail();
    }
    return failure_;
  }
  if (received_signal_ != 0) {
    WorkerFailure failure;
    failure.kind = WorkerFailure::Kind::kReceivedSignal;
    failure.signal = received_signal_;
    failure.exit_code = 128 + received_signal_;
    return std::optional<WorkerFailure>(failure);
  }
  return std::optional<WorkerFailure>();
}

Status Supervisor::HandleSignals() {
  HETRUN_ASSIGN_OR_RETURN(std::vector<int> pending, signals_.ReadPending());
  for (int signal : pending) {
    if (signal != SIGCHLD) HandleSignal(signal);
  }
  return Status::Ok();
}

void Supervisor::HandleSignal(int signal) {
  if (!IsShutdownSignal(signal)) {
    // SIGUSR1/SIGUSR2: notifications (e.g. a preemption notice); forwarded, nothing else.
    spdlog::info("received {}: forwarding it to every worker group", SignalName(signal));
    SignalGroups(signal, false);
    return;
  }
  if (shutdown_ || cleanup_) {
    // One shutdown: later signals neither reach the workers again nor move the deadline.
    auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
    spdlog::info("received {} while already stopping; SIGKILL in {}", SignalName(signal),
                 FormatDuration(std::max(left, milliseconds(0))));
    return;
  }
  received_signal_ = signal;
  spdlog::warn("received {}: forwarding it to every worker group; SIGKILL in {}",
               SignalName(signal), FormatDuration(options_.grace_period));
  BeginShutdown(signal);
}

void Supervisor::BeginShutdown(int signal) {
  if (shutdown_) return;
  shutdown_ = true;
  deadline_ = Clock::now() + options_.grace_period;
  SignalGroups(signal, true);
}

void Supervisor::SignalGroups(int signal, bool include_strays) {
  for (const Worker& worker : workers_) {
    if (worker.pid <= 0) continue;
    // The group outlives its leader while data-loader children remain; ESRCH means it is empty.
    if (::kill(-worker.pid, signal) != 0 && errno != ESRCH) {
      spdlog::warn("kill(-{}, {}): {}", worker.pid, SignalName(signal), std::strerror(errno));
    }
  }
  if (!include_strays || !reaper_) return;
  // Descendants that left their worker's group (setsid, setpgid) and were re-parented to us.
  for (pid_t child : DirectChildren()) {
    if (FindWorker(child) != nullptr) continue;
    if (::kill(child, signal) != 0 && errno != ESRCH) {
      spdlog::warn("kill({}, {}): {}", child, SignalName(signal), std::strerror(errno));
    }
  }
}

void Supervisor::Reap() {
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0) return;
    if (pid < 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) no_children_ = true;
      return;
    }
    if (Worker* worker = FindWorker(pid); worker != nullptr && worker->running) {
      OnWorkerExit(*worker, status);
    } else {
      spdlog::debug("reaped orphan pid {} (status {})", pid, ExitCodeForWaitStatus(status));
    }
  }
}

void Supervisor::OnWorkerExit(Worker& worker, int wait_status) {
  worker.running = false;
  WorkerFailure failure;
  failure.rank = worker.spec.rank;
  failure.local_rank = worker.spec.local_rank;
  failure.exit_code = ExitCodeForWaitStatus(wait_status);
  if (WIFSIGNALED(wait_status)) {
    failure.kind = WorkerFailure::Kind::kSignaled;
    failure.signal = WTERMSIG(wait_status);
  }
  if (failure.exit_code == 0) {
    spdlog::debug("rank {} exited with code 0", worker.spec.rank);
    return;
  }
  if (shutdown_) {
    spdlog::info("{}", FailureSummary(failure));
    return;
  }
  spdlog::error("{}; stopping the other workers", FailureSummary(failure));
  failure_ = failure;
  BeginShutdown(SIGTERM);
}

void Supervisor::CheckHeartbeats() {
  if (heartbeats_ == nullptr || shutdown_ || cleanup_) return;
  Clock::time_point now = Clock::now();
  if (now < next_heartbeat_check_) return;
  next_heartbeat_check_ = now + std::min(milliseconds(1000), options_.hang_timeout / 4);
  auto wall_now = std::chrono::system_clock::now();
  for (Worker& worker : workers_) {
    if (!worker.running) continue;
    auto last = worker.started;
    struct stat st {};
    if (::stat(worker.heartbeat.c_str(), &st) == 0) {
      auto beat = std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::seconds(st.st_mtim.tv_sec) +
              std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
      last = std::max(last, beat);
    }
    auto silence = std::chrono::duration_cast<milliseconds>(wall_now - last);
    if (silence <= options_.hang_timeout) continue;
    WorkerFailure failure;
    failure.kind = WorkerFailure::Kind::kHang;
    failure.rank = worker.spec.rank;
    failure.local_rank = worker.spec.local_rank;
    failure.exit_code = kExitTransient;
    failure.silence = silence;
    failure.hang_timeout = options_.hang_timeout;
    spdlog::error("{}; stopping every worker", FailureSummary(failure));
    failure_ = failure;
    BeginShutdown(SIGTERM);
    SignalGroups(SIGCONT, false);  // a stopped worker must run to act on SIGTERM
    return;
  }
}

void Supervisor::DrainPipe(UniqueFd& pipe, OutputTee& tee, bool until_eof) {
  char buffer[65536];
  while (pipe.valid()) {
    ssize_t n = ::read(pipe.get(), buffer, sizeof(buffer));
    if (n > 0) {
      tee.Consume(std::string_view(buffer, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && !until_eof) return;
    // EOF, an error, or the end of supervision (a write end held by a process that escaped us).
    tee.Finish();
    pipe.Reset();
  }
}

int Supervisor::PollTimeoutMs() const {
  std::optional<milliseconds> wait;
  Clock::time_point now = Clock::now();
  auto until = [&](Clock::time_point t) {
    return std::max(milliseconds(0), std::chrono::ceil<milliseconds>(t - now));
  };
  if ((shutdown_ || cleanup_) && !killed_) wait = until(deadline_);
  if (killed_) wait = std::min(milliseconds(50), until(killed_at_ + kAfterKillWait));
  if (heartbeats_ != nullptr && !shutdown_ && !cleanup_) {
    milliseconds check = until(next_heartbeat_check_);
    wait = wait ? std::min(*wait, check) : check;
  }
  if (!wait) return -1;
  return static_cast<int>(std::min(wait->count(), int64_t{60'000}));
}

bool Supervisor::AnyRunning() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
}

Worker* Supervisor::FindWorker(pid_t pid) {
  for (Worker& worker : workers_) {
    if (worker.pid == pid) return &worker;
  }
  return nullptr;
}

// Registers this process to inherit orphans: PID 1 does by definition, others ask the kernel.
bool BecomeReaper() {
  if (::getpid() == 1) return true;
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) return true;
  spdlog::warn(
      "prctl(PR_SET_CHILD_SUBREAPER): {}; orphans of the workers will not be reaped "
      "by hetrun (run it as PID 1 or under tini)",
      std::strerror(errno));
  return false;
}

}  // namespace

Result<SupervisorOutcome> Supervise(const SupervisorOptions& options, const WorkerSpecsFn& specs) {
  if (options.command.empty()) return UsageError("no command to run");
  if (!options.log_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.log_dir, error);
    if (error) {
      return InvalidArgumentError("--log-dir " + options.log_dir + ": " + error.message());
    }
  }
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<SignalSet> signals, SignalSet::Install());
  if (options.on_signals_ready) options.on_signals_ready();
  bool reaper = BecomeReaper();
  std::unique_ptr<HeartbeatDir> heartbeats;
  if (options.hang_timeout.count() > 0) {
    HETRUN_ASSIGN_OR_RETURN(heartbeats, HeartbeatDir::Create());
  }

  SupervisorOutcome outcome;
  for (int restart = 0;; ++restart) {
    HETRUN_ASSIGN_OR_RETURN(std::vector<WorkerSpec> workers, specs(restart));
    Supervisor supervisor(options, *signals, reaper, heartbeats.get());
    if (restart > 0) {
      HETRUN_ASSIGN_OR_RETURN(int signal, supervisor.PendingShutdownSignal());
      if (signal != 0) {
        spdlog::warn("received {} before restart {}: not restarting", SignalName(signal), restart);
        outcome.failure = WorkerFailure{};
        outcome.failure.kind = WorkerFailure::Kind::kReceivedSignal;
        outcome.failure.signal = signal;
        outcome.failure.exit_code = 128 + signal;
        outcome.failure.restarts = outcome.restarts;
        outcome.exit_code = outcome.failure.exit_code;
        return outcome;
      }
    }
    HETRUN_ASSIGN_OR_RETURN(std::optional<WorkerFailure> failure,
                            supervisor.RunAttempt(std::move(workers), restart));
    if (!failure) {
      outcome.exit_code = kExitOk;
      outcome.failed = false;
      return outcome;
    }
    failure->restarts = outcome.restarts;
    outcome.failed = true;
    outcome.failure = *failure;
    outcome.exit_code = failure->exit_code;
    if (!IsRestartable(*failure) || outcome.restarts >= options.max_restarts) return outcome;
    ++outcome.restarts;
    spdlog::warn("{}; restarting the local worker group (restart {} of {})",
                 FailureSummary(*failure), outcome.restarts, options.max_restarts);
  }
}

}  // namespace hetrun::launcher

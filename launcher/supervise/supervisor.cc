#include "supervise/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/logging.h"
#include "hetrun/base/units.h"
#include "supervise/child_process.h"
#include "supervise/output/console_sink.h"
#include "supervise/output/output_tee.h"
#include "supervise/private_dir.h"
#include "supervise/report/oom_kills.h"
#include "supervise/report/worker_error_file.h"
#include "supervise/signal_set.h"
#include "supervise/unique_fd.h"
#include "supervise/watchers/attempt_deadline.h"
#include "supervise/watchers/fail_slow_watcher.h"
#include "supervise/watchers/heartbeat_watcher.h"
#include "supervise/watchers/replan_wait.h"

namespace hetrun::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// After SIGKILL, how long to wait for the kernel to deliver it before giving up (processes in
/// uninterruptible sleep, e.g. stuck in a driver call, cannot be reaped sooner).
constexpr milliseconds kAfterKillWait{5'000};
/// While stopping, the stray sweep runs at least this often (a process orphaned deep in the
/// tree is re-parented to us without a SIGCHLD).
constexpr milliseconds kSweepInterval{100};
/// Bytes read from one worker pipe per poll turn: a flood waits for the next turn.
constexpr size_t kMaxReadBytesPerTurn = 256 * 1024;
/// At the end of supervision, how long a console that is behind gets to take what is queued.
constexpr int kFinalFlushMs = 500;

struct Worker {
  WorkerSpec spec;
  pid_t pid = -1;  ///< also its process group id; -1 when it never started
  bool running = false;
  UniqueFd out_pipe;
  UniqueFd err_pipe;
  UniqueFd log;
  std::string log_path;
  UniqueFd stream_logs[2];  ///< torchrun-layout stdout.log / stderr.log (--tee, --redirects)
  std::unique_ptr<OutputTee> out;
  std::unique_ptr<OutputTee> err;
  std::string error_file;  ///< TORCHELASTIC_ERROR_FILE
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

// A worker's log file. `private_folder`: a --tee/--redirects file in a folder of this user only
// (private_dir.h), never opened through a symlink planted in its place (O_NOFOLLOW), mode 0600;
// --log-dir's files are where the user said (a symlink there is theirs).
Result<UniqueFd> OpenLog(const std::string& path, std::string_view what, bool private_folder) {
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (private_folder ? O_NOFOLLOW : 0);
  int fd = ::open(path.c_str(), flags, private_folder ? 0600 : 0644);
  if (fd < 0) return ErrnoError("open", path, errno).WithContext(std::string(what));
  return UniqueFd(fd);
}

std::string LogName(int rank, int restart_count) {
  return restart_count == 0 ? "rank_" + std::to_string(rank) + ".log"
                            : "rank_" + std::to_string(rank) + ".restart_" +
                                  std::to_string(restart_count) + ".log";
}

/// The consoles every worker's output goes to, shared across attempts.
struct Consoles {
  ConsoleSink out;
  ConsoleSink err;
  std::map<const ConsoleSink*, uint64_t> reported_drops;  ///< dropped lines already logged
};

class Supervisor {
 public:
  Supervisor(const SupervisorOptions& options, SignalSet& signals, bool reaper, Consoles& consoles)
      : options_(options),
        signals_(signals),
        reaper_(reaper),
        consoles_(consoles),
        replan_(options.grace_period, options.checkpoint_dir) {}

  /// A shutdown signal that arrived between attempts (0 = none).
  Result<int> PendingShutdownSignal();

  /// Runs one attempt to the end; nullopt when every worker succeeded.
  Result<std::optional<WorkerFailure>> RunAttempt(std::vector<WorkerSpec> specs, int restart_count);

 private:
  void ArmWatchers();
  Status StartWorkers(int restart_count);
  Status Spawn(size_t index, int restart_count);
  Status PrepareOutput(Worker& worker, int restart_count);
  Status PrepareRunFiles(size_t index, int restart_count, std::map<std::string, std::string>& env);
  Result<bool> Turn();
  Status PollOnce();
  void StopForJobRestart();
  Status HandleSignals();
  void HandleSignal(int signal);
  void Reap();
  void OnWorkerExit(Worker& worker, int wait_status);
  bool WaitForReplan(const WorkerFailure& failure);
  void BeginShutdown(int signal);
  void SignalGroups(int signal, bool include_strays);
  void SweepStrays();
  bool CheckDeadlines();
  void CheckWatchers();
  void ReadPipe(UniqueFd& pipe, OutputTee& tee, bool until_eof);
  std::optional<WorkerFailure> EndAttempt();
  void ReportLostOutput();
  int PollTimeoutMs() const;
  bool AnyRunning() const;
  Worker* FindWorker(pid_t pid);
  void PublishStatus();

  const SupervisorOptions& options_;
  SignalSet& signals_;
  bool reaper_;
  Consoles& consoles_;

  std::vector<Worker> workers_;
  std::optional<WorkerFailure> failure_;
  std::optional<WorkerFailure> last_failure_;  ///< the last non-zero worker exit (for status)
  // The periodic concerns (supervise/watchers/), asked in this order every turn not stopping.
  ReplanWait replan_;                           ///< --replan-restart's wait for every 82
  std::optional<HeartbeatWatcher> heartbeats_;  ///< --hang-timeout
  std::optional<FailSlowWatcher> fail_slow_;    ///< the tuner's fail-slow reports
  std::optional<AttemptDeadline> attempt_deadline_;
  std::vector<Watcher*> watchers_;
  int restarts_done_ = 0;
  int received_signal_ = 0;  ///< the first shutdown signal hetrun handled, if any
  bool shutdown_ = false;    ///< SIGTERM (or the received signal) sent; deadline armed
  bool cleanup_ = false;     ///< every worker exited; leftovers are being stopped
  bool killed_ = false;      ///< SIGKILL sent
  bool no_children_ = false;
  std::set<pid_t> swept_term_;  ///< strays sent SIGTERM by the sweep
  std::set<pid_t> swept_kill_;  ///< strays sent SIGKILL by the sweep
  Clock::time_point deadline_;
  Clock::time_point killed_at_;
  OomKillCounter oom_kills_;  ///< tells a SIGKILL by the cgroup's OOM killer
};

Result<int> Supervisor::PendingShutdownSignal() {
  HETRUN_ASSIGN_OR_RETURN(std::vector<int> pending, signals_.ReadPending());
  for (int signal : pending) {
    if (IsShutdownSignal(signal)) return signal;
  }
  return 0;
}

Status Supervisor::PrepareOutput(Worker& worker, int restart_count) {
  if (!options_.log_dir.empty()) {
    worker.log_path = options_.log_dir + "/" + LogName(worker.spec.rank, restart_count);
    HETRUN_ASSIGN_OR_RETURN(worker.log, OpenLog(worker.log_path, "--log-dir", false));
  }
  int local_rank = worker.spec.local_rank;
  int streams = options_.tee_streams.For(local_rank) | options_.redirect_streams.For(local_rank);
  int redirected = options_.redirect_streams.For(local_rank);
  const auto& shown = options_.console_local_ranks;
  bool console = shown.empty() || std::find(shown.begin(), shown.end(), local_rank) != shown.end();
  ConsoleSink* sinks[2] = {&consoles_.out, &consoles_.err};
  for (int stream = 0; stream < 2; ++stream) {
    int bit = stream + 1;
    if (!console || (redirected & bit)) sinks[stream] = nullptr;
    if (!(streams & bit)) continue;
    std::string dir = options_.stream_log_dir + "/attempt_" + std::to_string(restart_count) + "/" +
                      std::to_string(local_rank);
    std::error_code error;
    std::filesystem::create_directories(options_.stream_log_root, error);
    if (error) {
      return ErrnoError("mkdir", options_.stream_log_root, error.value())
          .WithContext("--tee/--redirects");
    }
    HETRUN_RETURN_IF_ERROR(MakePrivateDirs(options_.stream_log_root, dir, "--tee/--redirects"));
    HETRUN_ASSIGN_OR_RETURN(
        worker.stream_logs[stream],
        OpenLog(dir + (stream == 0 ? "/stdout.log" : "/stderr.log"), "--tee/--redirects", true));
  }
  // A stream has one file: --log-dir's rank file, else its torchrun-layout file.
  auto file = [&worker](int stream) {
    return worker.stream_logs[stream].valid() ? worker.stream_logs[stream].get() : worker.log.get();
  };
  std::string prefix =
      options_.prefix_ranks ? "[rank " + std::to_string(worker.spec.rank) + "] " : "";
  worker.out = std::make_unique<OutputTee>(sinks[0], prefix, file(0), 0);
  worker.err = std::make_unique<OutputTee>(sinks[1], prefix, file(1), options_.tail_lines);
  if (CurrentLogFormat() == LogFormat::kJson) {
    worker.out->WrapAsJson(worker.spec.rank, "stdout");
    worker.err->WrapAsJson(worker.spec.rank, "stderr");
  }
  return Status::Ok();
}

// The worker's files in the run folder: its heartbeat file (with --hang-timeout), its
// TORCHELASTIC_ERROR_FILE (attempt_<n>/rank_<r>/error.json, absent until the worker writes it)
// and no fail-slow report of an attempt before.
Status Supervisor::PrepareRunFiles(size_t index, int restart_count,
                                   std::map<std::string, std::string>& env) {
  Worker& worker = workers_[index];
  env["HETRUN_RUN_DIR"] = options_.run_dir;
  env.erase("HETRUN_HEARTBEAT");
  if (heartbeats_) {
    HETRUN_ASSIGN_OR_RETURN(std::string heartbeat,
                            heartbeats_->Arm(index, worker.spec.local_rank, Clock::now()));
    env["HETRUN_HEARTBEAT"] = heartbeat;
  }
  std::string dir = options_.run_dir + "/attempt_" + std::to_string(restart_count) + "/rank_" +
                    std::to_string(worker.spec.rank);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return ErrnoError("mkdir", dir, error.value()).WithContext("run folder");
  worker.error_file = dir + "/error.json";
  std::filesystem::remove(worker.error_file, error);
  env["TORCHELASTIC_ERROR_FILE"] = worker.error_file;
  fail_slow_->Arm(index, worker.spec.rank);
  return Status::Ok();
}

Status Supervisor::Spawn(size_t index, int restart_count) {
  Worker& worker = workers_[index];
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
  HETRUN_RETURN_IF_ERROR(PrepareOutput(worker, restart_count));
  SpawnSpec spec{options_.command, worker.spec.env, out[1], err[1], worker.spec.cpus};
  HETRUN_RETURN_IF_ERROR(PrepareRunFiles(index, restart_count, spec.env));
  HETRUN_ASSIGN_OR_RETURN(worker.pid, SpawnProcess(spec));
  worker.running = true;
  spdlog::debug("started rank {} (local rank {}) as pid {}", worker.spec.rank,
                worker.spec.local_rank, worker.pid);
  return Status::Ok();
}

Status Supervisor::StartWorkers(int restart_count) {
  for (size_t index = 0; index < workers_.size(); ++index) {
    Worker& worker = workers_[index];
    Status started = Spawn(index, restart_count);
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
  return Status::Ok();
}

Result<std::optional<WorkerFailure>> Supervisor::RunAttempt(std::vector<WorkerSpec> specs,
                                                            int restart_count) {
  restarts_done_ = restart_count;
  workers_.clear();
  workers_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) workers_[i].spec = std::move(specs[i]);
  ArmWatchers();
  oom_kills_.Rebase();
  HETRUN_RETURN_IF_ERROR(StartWorkers(restart_count));
  while (true) {
    HETRUN_ASSIGN_OR_RETURN(bool more, Turn());
    if (!more) break;
  }
  return EndAttempt();
}

// The attempt's watchers, in the order the loop asks them (the deadline counts from now).
void Supervisor::ArmWatchers() {
  watchers_ = {&replan_};
  if (options_.WatchesHeartbeats()) {
    watchers_.push_back(&heartbeats_.emplace(options_.run_dir, options_.hang_timeout,
                                             workers_.size(), options_.startup_timeout));
  }
  FailSlowWatch fail_slow{options_.run_dir, options_.fail_slow_exit, options_.node_rank,
                          options_.gpu_names};
  watchers_.push_back(&fail_slow_.emplace(std::move(fail_slow), workers_.size()));
  if (options_.attempt_deadline.count() > 0) {
    watchers_.push_back(&attempt_deadline_.emplace(Clock::now(), options_.attempt_deadline));
  }
}

// One turn of the loop: false when the attempt is over.
Result<bool> Supervisor::Turn() {
  if (!AnyRunning()) {
    if (!cleanup_) {
      cleanup_ = true;
      if (!shutdown_) {
        // Success (or every worker already gone): nothing the workers started may outlive us.
        deadline_ = Clock::now() + options_.grace_period;
        SignalGroups(SIGTERM, true);
      }
    }
    if (no_children_ || !reaper_) return false;
  }
  HETRUN_RETURN_IF_ERROR(PollOnce());
  HETRUN_RETURN_IF_ERROR(HandleSignals());
  Reap();
  if (!CheckDeadlines()) return false;
  if (shutdown_ || cleanup_) SweepStrays();
  CheckWatchers();
  PublishStatus();
  return true;
}

void Supervisor::PublishStatus() {
  if (options_.status == nullptr) return;
  SupervisionStatus& status = *options_.status;
  status.workers.clear();
  Clock::time_point now = Clock::now();
  for (size_t i = 0; i < workers_.size(); ++i) {
    const Worker& worker = workers_[i];
    double since = heartbeats_ ? heartbeats_->SecondsSinceBeat(i, now) : -1;
    status.workers.push_back({worker.spec.rank, worker.spec.local_rank, worker.running, since});
  }
  status.restarts = restarts_done_;
  if (last_failure_) {
    status.last_exit_code = last_failure_->exit_code;
    status.last_exit_reason = FailureSummary(*last_failure_);
  }
}

// Waits for the first of: a signal, worker output, a console with room again, a deadline.
// Reads a bounded amount per pipe and never blocks on a console.
Status Supervisor::PollOnce() {
  std::vector<pollfd> fds;
  fds.push_back({signals_.fd(), POLLIN, 0});
  // A job-wide restart stops a running attempt; once stopping, the fd (still readable) is left
  // out of the poll set.
  // During a re-plan wait it is left out too: the workers are saving their checkpoint and
  // exiting 82 (another node that already restarted for its re-plan must not stop them).
  const bool watch_restart = options_.restart_fd >= 0 && !shutdown_ && !cleanup_ && !replan_.open();
  fds.push_back({watch_restart ? options_.restart_fd : -1, POLLIN, 0});
  std::vector<std::pair<UniqueFd*, OutputTee*>> pipes;
  for (Worker& worker : workers_) {
    for (auto [pipe, tee] : {std::pair{&worker.out_pipe, worker.out.get()},
                             std::pair{&worker.err_pipe, worker.err.get()}}) {
      if (!pipe->valid() || tee == nullptr) continue;
      fds.push_back({pipe->get(), POLLIN, 0});
      pipes.emplace_back(pipe, tee);
    }
  }
  std::vector<ConsoleSink*> consoles;
  for (ConsoleSink* console : {&consoles_.out, &consoles_.err}) {
    if (!console->Pending()) continue;
    fds.push_back({console->poll_fd(), POLLOUT, 0});
    consoles.push_back(console);
  }
  size_t participant_first = fds.size();
  if (options_.poll_participant != nullptr) options_.poll_participant->AppendFds(&fds);
  int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs());
  if (ready < 0 && errno != EINTR) return ErrnoError("poll", "supervisor loop", errno);
  if (ready > 0 && fds[1].revents != 0) StopForJobRestart();
  if (options_.poll_participant != nullptr) {
    if (ready < 0) {
      for (pollfd& fd : fds) fd.revents = 0;
    }
    options_.poll_participant->HandleReady(std::span<const pollfd>(fds).subspan(participant_first));
  }
  for (size_t i = 0; ready > 0 && i < pipes.size(); ++i) {
    if (fds[i + 2].revents != 0) ReadPipe(*pipes[i].first, *pipes[i].second, false);
  }
  // Partial lines quiet long enough, JSON progress held back (OutputTee::NextTick).
  const Clock::time_point now = Clock::now();
  for (Worker& worker : workers_) {
    for (OutputTee* tee : {worker.out.get(), worker.err.get()}) {
      if (tee != nullptr) tee->Tick(now);
    }
  }
  for (size_t i = 0; ready > 0 && i < consoles.size(); ++i) {
    if (fds[2 + pipes.size() + i].revents != 0) consoles[i]->Flush();
  }
  return Status::Ok();
}

// Another node's workers failed restartably: stop this attempt as a restartable failure (the
// first failure of the attempt wins: a local one already stopping the group stays the reason).
void Supervisor::StopForJobRestart() {
  if (failure_ || shutdown_) return;
  WorkerFailure failure;
  failure.kind = WorkerFailure::Kind::kJobRestart;
  failure.rank = -1;
  failure.exit_code = kExitTransient;
  failure.detail = options_.restart_reason ? options_.restart_reason() : "job-wide restart";
  if (options_.replan_restart && !replan_.open() && options_.restart_is_replan &&
      options_.restart_is_replan()) {
    // Another node's workers exited 82 first: this node's are finishing the same checkpoint.
    replan_.OnJobReplan(failure, Clock::now());
    if (!AnyRunning()) failure_ = replan_.Finish();
    return;
  }
  spdlog::warn("{}; stopping every worker", FailureSummary(failure));
  failure_ = failure;
  BeginShutdown(SIGTERM);
}

// SIGKILL at the grace deadline; false once processes survived SIGKILL too long.
bool Supervisor::CheckDeadlines() {
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
    return false;
  }
  return true;
}

std::optional<WorkerFailure> Supervisor::EndAttempt() {
  for (Worker& worker : workers_) {
    if (!worker.out || !worker.err) continue;  // never spawned (an earlier worker failed to start)
    ReadPipe(worker.out_pipe, *worker.out, true);
    ReadPipe(worker.err_pipe, *worker.err, true);
  }
  consoles_.out.FlushFor(kFinalFlushMs);
  consoles_.err.FlushFor(kFinalFlushMs);
  ReportLostOutput();
  if (failure_) {
    for (const Worker& worker : workers_) {
      if (worker.spec.rank != failure_->rank) continue;
      if (worker.err) failure_->stderr_tail = worker.err->Tail();
      if (std::optional<WorkerErrorReport> report = ReadWorkerErrorFile(worker.error_file)) {
        failure_->error_message = report->message;
        failure_->error_frames = report->last_frames;
      }
    }
    ClassifyWorkerFailure(*failure_);
    return failure_;
  }
  if (received_signal_ != 0) {
    WorkerFailure failure;
    failure.kind = WorkerFailure::Kind::kReceivedSignal;
    failure.signal = received_signal_;
    failure.exit_code = 128 + received_signal_;
    return failure;
  }
  return std::nullopt;
}

// Output that did not reach the console (a reader that fell behind) or a log file (a full disk)
// leaves a trace: counted, logged once per attempt.
void Supervisor::ReportLostOutput() {
  for (ConsoleSink* console : {&consoles_.out, &consoles_.err}) {
    uint64_t& before = consoles_.reported_drops[console];
    if (console->dropped_lines() == before) continue;
    spdlog::warn("{} worker output line(s) ({} bytes in all) dropped: hetrun's {} {}",
                 console->dropped_lines() - before, console->dropped_bytes(), console->name(),
                 console->last_error() != 0
                     ? std::string("failed: ") + std::strerror(console->last_error())
                     : std::string("was not read fast enough (its buffer was full)"));
    before = console->dropped_lines();
  }
  for (const Worker& worker : workers_) {
    uint64_t lost = 0;
    int error = 0;
    for (const OutputTee* tee : {worker.out.get(), worker.err.get()}) {
      if (tee == nullptr || tee->log_lost_lines() == 0) continue;
      lost += tee->log_lost_lines();
      error = tee->log_error();
    }
    if (lost == 0) continue;
    spdlog::warn("{} line(s) of rank {} could not be written to {}: {}", lost, worker.spec.rank,
                 worker.log_path, std::strerror(error));
  }
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
    // One shutdown: later signals neither reach the workers again, nor move the deadline, nor
    // change the exit code (the first one handled decides it).
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
  std::set<pid_t>& swept = signal == SIGKILL ? swept_kill_ : swept_term_;
  for (pid_t child : DirectChildren()) {
    if (FindWorker(child) != nullptr) continue;
    if (signal == SIGTERM || signal == SIGKILL) swept.insert(child);
    if (::kill(child, signal) != 0 && errno != ESRCH) {
      spdlog::warn("kill({}, {}): {}", child, SignalName(signal), std::strerror(errno));
    }
  }
}

// While stopping: strays re-parented to us since the last sweep (a grandchild whose parent was
// just killed) get the signal of the moment too: SIGTERM before the deadline, SIGKILL after.
void Supervisor::SweepStrays() {
  if (!reaper_) return;
  const int signal = killed_ ? SIGKILL : SIGTERM;
  std::set<pid_t>& swept = killed_ ? swept_kill_ : swept_term_;
  for (pid_t child : DirectChildren()) {
    if (FindWorker(child) != nullptr || !swept.insert(child).second) continue;
    spdlog::debug("sweep: {} to re-parented pid {}", SignalName(signal), child);
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
    swept_term_.erase(pid);
    swept_kill_.erase(pid);
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
    oom_kills_.Classify(failure);
  }
  if (options_.replan_restart && !shutdown_ && WaitForReplan(failure)) return;
  if (failure.exit_code == 0) {
    spdlog::debug("rank {} exited with code 0", worker.spec.rank);
    return;
  }
  last_failure_ = failure;
  if (shutdown_) {
    spdlog::info("{}", FailureSummary(failure));
    return;
  }
  spdlog::error("{}; stopping the other workers", FailureSummary(failure));
  failure_ = failure;
  BeginShutdown(SIGTERM);
}

// --replan-restart (supervise/watchers/replan_wait.h): true when `failure` is part of the
// re-plan wait; once no worker runs any more the wait is decided.
bool Supervisor::WaitForReplan(const WorkerFailure& failure) {
  ReplanWait::ExitStep step = replan_.OnWorkerExit(failure, Clock::now());
  switch (step.step) {
    case ReplanWait::Step::kOrdinary:
      return false;
    case ReplanWait::Step::kBroken:
      failure_ = step.broken;
      BeginShutdown(SIGTERM);
      return true;
    case ReplanWait::Step::kOpened:
      last_failure_ = failure;
      break;
    case ReplanWait::Step::kJoined:
      break;
  }
  if (!AnyRunning()) failure_ = replan_.Finish();
  return true;
}

// Every watcher, while the attempt is not stopping; the first verdict stops every worker (a hang
// or a deadline: stopped ones too).
void Supervisor::CheckWatchers() {
  if (shutdown_ || cleanup_) return;
  const Clock::time_point now = Clock::now();
  std::vector<WatchedWorker> watched;
  for (const Worker& worker : workers_) {
    watched.push_back({worker.spec.rank, worker.spec.local_rank, worker.running});
  }
  for (Watcher* watcher : watchers_) {
    std::optional<WatchVerdict> verdict = watcher->Check(now, watched);
    if (!verdict) continue;
    failure_ = verdict->failure;
    BeginShutdown(SIGTERM);
    // A stopped worker must run to act on SIGTERM.
    if (verdict->stuck) SignalGroups(SIGCONT, false);
    return;
  }
}

// Reads what `pipe` holds, at most kMaxReadBytesPerTurn unless `until_eof` (the end of the
// attempt, every worker gone).
void Supervisor::ReadPipe(UniqueFd& pipe, OutputTee& tee, bool until_eof) {
  char buffer[65536];
  size_t budget = kMaxReadBytesPerTurn;
  while (pipe.valid() && (until_eof || budget > 0)) {
    ssize_t n =
        ::read(pipe.get(), buffer, until_eof ? sizeof(buffer) : std::min(sizeof(buffer), budget));
    if (n > 0) {
      tee.Consume(std::string_view(buffer, static_cast<size_t>(n)));
      if (!until_eof) budget -= static_cast<size_t>(n);
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
  if ((shutdown_ || cleanup_) && !killed_) wait = std::min(kSweepInterval, until(deadline_));
  if (killed_) wait = std::min(milliseconds(50), until(killed_at_ + kAfterKillWait));
  for (const Watcher* watcher : watchers_) {
    std::optional<Clock::time_point> check =
        shutdown_ || cleanup_ ? std::nullopt : watcher->NextCheck();
    if (check) wait = wait ? std::min(*wait, until(*check)) : until(*check);
  }
  for (const Worker& worker : workers_) {
    for (const OutputTee* tee : {worker.out.get(), worker.err.get()}) {
      std::optional<Clock::time_point> tick = tee != nullptr ? tee->NextTick() : std::nullopt;
      if (tick) wait = wait ? std::min(*wait, until(*tick)) : until(*tick);
    }
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

WorkerFailure ReceivedSignalFailure(int signal, int restarts) {
  WorkerFailure failure;
  failure.kind = WorkerFailure::Kind::kReceivedSignal;
  failure.signal = signal;
  failure.exit_code = 128 + signal;
  failure.restarts = restarts;
  return failure;
}

// Whether `failure` (after `restarts` restarts) ends the run; logs the restart otherwise.
// `last_failure` carries the signature of the previous attempt's failure: a SIGABRT, or under
// --restart-on any every failure, repeated the same way stops the restarts.
bool StopsTheRun(WorkerFailure& failure, int restarts, const SupervisorOptions& options,
                 std::string& last_failure) {
  // An NCCL watchdog abort or a lost peer is a symptom of a peer, not of this worker:
  // restartable every time.
  const bool any = options.restart_on == RestartOn::kAny;
  const bool transient = failure.cause == WorkerFailure::Cause::kNcclTimeout ||
                         failure.cause == WorkerFailure::Cause::kCommFailure;
  std::string signature =
      transient ? "" : (any ? FailureSignature(failure) : AbortSignature(failure));
  if (!signature.empty() && signature == last_failure) {
    failure.cause =
        any ? WorkerFailure::Cause::kRepeatedFailure : WorkerFailure::Cause::kRepeatedAbort;
    return true;
  }
  last_failure = signature;
  if (!IsRestartable(failure, options.restart_on) || restarts >= options.max_restarts) return true;
  spdlog::warn("{}; restarting the local worker group (restart {} of {})", FailureSummary(failure),
               restarts + 1, options.max_restarts);
  return false;
}

// The attempt's folders in the run folder, made before any of its workers starts, so a full disk
// is found here and not half-way through spawning. A full disk (ENOSPC, EDQUOT) is exit 78
// naming the run folder; the caller keeps the last failure instead on a restart.
Status PrepareAttemptFolders(const SupervisorOptions& options,
                             const std::vector<WorkerSpec>& workers, int restart) {
  std::vector<std::string> dirs;
  if (options.WatchesHeartbeats()) dirs.push_back(options.run_dir + "/heartbeat");
  for (const WorkerSpec& worker : workers) {
    dirs.push_back(options.run_dir + "/attempt_" + std::to_string(restart) + "/rank_" +
                   std::to_string(worker.rank));
  }
  for (const std::string& dir : dirs) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (!error) continue;
    Status failed = ErrnoError("mkdir", dir, error.value());
    if (error.value() != ENOSPC && error.value() != EDQUOT) return failed.WithContext("run folder");
    return InvalidArgumentError("run folder " + options.run_dir + ": the disk is full (" +
                                failed.message() + "); free space there or set HETRUN_RUN_BASE");
  }
  return Status::Ok();
}

// Every local worker exited 82 with a complete checkpoint: true (and counted) when another
// re-plan fits in --max-replans; else `outcome` is the ordinary failure (exit 1) saying so.
bool ReplanAllowed(SupervisorOutcome& outcome, const SupervisorOptions& options) {
  if (outcome.replans >= options.max_replans) {
    outcome.failure.replan_agreed = false;
    outcome.failure.detail = "that would be re-plan " + std::to_string(outcome.replans + 1) +
                             ", over --max-replans " + std::to_string(options.max_replans);
    outcome.exit_code = outcome.failure.exit_code;
    spdlog::error("{}", FailureSummary(outcome.failure));
    return false;
  }
  ++outcome.replans;
  spdlog::warn(
      "re-plan by restart {} of {}: restarting the local worker group on the recorded "
      "layout (not counted against --max-restarts)",
      outcome.replans, options.max_replans);
  return true;
}

}  // namespace

Result<SupervisorOutcome> Supervise(const SupervisorOptions& options, const WorkerSpecsFn& specs) {
  if (options.command.empty()) return UsageError("no command to run");
  if (options.run_dir.empty()) return InternalError("Supervise: no run folder");
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
  Consoles consoles{
      ConsoleSink(options.console_out, "stdout"), ConsoleSink(options.console_err, "stderr"), {}};

  SupervisorOutcome outcome;
  std::string last_failure;
  bool replanned = false;
  for (int restart = 0;; ++restart) {
    HETRUN_ASSIGN_OR_RETURN(std::vector<WorkerSpec> workers, specs(restart, replanned));
    if (Status room = PrepareAttemptFolders(options, workers, restart); !room.ok()) {
      if (restart == 0) return room;
      // The last failure stays the outcome (its code, 75 most often, and its reason).
      spdlog::error("not restarting: {}", room.message());
      outcome.failure.not_restarted = room.message();
      outcome.exit_code = outcome.failure.exit_code;
      return outcome;
    }
    Supervisor supervisor(options, *signals, reaper, consoles);
    if (restart > 0) {
      HETRUN_ASSIGN_OR_RETURN(int signal, supervisor.PendingShutdownSignal());
      if (signal != 0) {
        spdlog::warn("received {} before restart {}: not restarting", SignalName(signal), restart);
        outcome.failure = ReceivedSignalFailure(signal, outcome.restarts);
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
    replanned = failure->replan_agreed;
    if (replanned) {
      if (!ReplanAllowed(outcome, options)) return outcome;
      continue;  // not counted against --max-restarts
    }
    if (StopsTheRun(outcome.failure, outcome.restarts, options, last_failure)) {
      outcome.exit_code = outcome.failure.exit_code;
      return outcome;
    }
    ++outcome.restarts;
  }
}

}  // namespace hetrun::launcher

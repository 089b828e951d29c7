// The supervisor of `hetrun run`: starts the local workers, forwards signals, reaps every
// orphan, stops the group when one worker fails or hangs, restarts it within a budget, and
// reports one exit code of the contract (docs/ARCHITECTURE.md §4.3). Single-threaded: one poll loop
// over a signalfd and the workers' output pipes; no work in asynchronous signal handlers.
//
// Guarantees, success or failure: when Supervise returns, every process it started and every
// descendant re-parented to it (it is PID 1 or a child subreaper) has been reaped. Leftovers in
// the workers' process groups get SIGTERM, then SIGKILL at the grace deadline; the sweep of
// re-parented strays repeats every turn (at least every 100 ms) until none is left or the
// deadline, so a grandchild orphaned late still gets its SIGTERM.
//
// Promptness: one poll turn reads at most kMaxReadBytesPerTurn from each worker pipe and writes
// to the console without blocking (launcher/supervise/output/console_sink.h), so a flood of output
// or a console reader that stopped reading never delays signal handling, reaping or the grace
// deadline; lines dropped under back-pressure are counted and logged.
//
// The loop's periodic concerns (hang detection, fail-slow reports, the re-plan wait, the attempt
// deadline) are watchers it asks every turn with the time (launcher/supervise/watchers/).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/report/failure_report.h"

namespace hetrun::launcher {

/// One worker to start: its ranks and its whole environment (see WorkerEnvironment).
struct WorkerSpec {
  int rank = 0;
  int local_rank = 0;
  std::map<std::string, std::string> env;
  std::vector<int>
      cpus{};  ///< CPU affinity (launcher/supervise/cpu_binding.h); empty = hetrun's own
};

/// torchrun's --tee / --redirects: which of a worker's streams (1 stdout, 2 stderr, 3 both) go
/// to its stream log files, for every local rank or per local rank ("0:1,1:2").
struct StreamMask {
  int all = 0;
  std::map<int, int> per_local_rank;
  int For(int local_rank) const {
    auto it = per_local_rank.find(local_rank);
    return it == per_local_rank.end() ? all : it->second;
  }
  bool any() const { return all != 0 || !per_local_rank.empty(); }
};

/// What the supervisor shows while it runs (hetrun run --metrics-port); refreshed every turn of
/// its loop, read between turns on the same thread.
struct SupervisionStatus {
  struct Worker {
    int rank = 0;
    int local_rank = 0;
    bool running = false;
    double seconds_since_beat = -1;  ///< -1: hang detection off or not started
  };
  std::vector<Worker> workers;
  int restarts = 0;
  std::optional<int> last_exit_code;  ///< the last worker that ended with a non-zero code
  std::string last_exit_reason;       ///< its FailureSummary
};

/// Descriptors polled in the supervisor's loop besides the workers' pipes (the metrics endpoint).
/// HandleReady must not block: it gets the revents of exactly the fds AppendFds added.
class PollParticipant {
 public:
  virtual ~PollParticipant() = default;
  virtual void AppendFds(std::vector<pollfd>* fds) = 0;
  virtual void HandleReady(std::span<const pollfd> fds) = 0;
};

struct SupervisorOptions {
  std::vector<std::string> command;  ///< argv of every worker; argv[0] searched in its PATH
  /// SIGTERM -> SIGKILL escalation: after a shutdown starts, whatever still runs when this has
  /// passed gets SIGKILL. Set it below the pod's terminationGracePeriodSeconds.
  std::chrono::milliseconds grace_period{30'000};
  /// No heartbeat for this long -> hang (exit 75). Zero = hang detection off. Measured on the
  /// monotonic clock: hetrun notes when a heartbeat file changes, never compares file times
  /// with the wall clock.
  std::chrono::milliseconds hang_timeout{0};
  /// Until a worker's first heartbeat, this long instead of hang_timeout (--startup-timeout,
  /// NVRx's initial timeout). Zero = hang_timeout. Either one > 0 turns the heartbeats on.
  std::chrono::milliseconds startup_timeout{0};
  bool WatchesHeartbeats() const { return hang_timeout.count() > 0 || startup_timeout.count() > 0; }
  /// The run folder (launcher/supervise/run_folder.h): heartbeat files and the workers'
  /// TORCHELASTIC_ERROR_FILE live there; HETRUN_RUN_DIR names it for the workers. Required.
  std::string run_dir;
  bool prefix_ranks = false;  ///< prefix console lines with "[rank R] " (--prefix-ranks)
  std::string log_dir;        ///< one log file per rank and attempt; empty = none
  /// torchrun's --tee (console and file) and --redirects (file only): streams in either mask
  /// go to <stream_log_dir>/attempt_<n>/<local_rank>/{stdout,stderr}.log, torchrun's layout.
  StreamMask tee_streams;
  StreamMask redirect_streams;
  /// stream_log_dir is below stream_log_root (--log-dir, made as given, or the user's private run
  /// base); the folders from there on are made 0700 and must be this user's (private_dir.h), the
  /// files are opened without following symlinks.
  std::string stream_log_root;
  std::string stream_log_dir;
  /// --local-ranks-filter: only these local ranks reach the console; empty = every one.
  std::vector<int> console_local_ranks;
  int max_restarts = 0;  ///< restarts of the whole local group after a restartable failure
  /// Which failures are restartable (--restart-on): transient ones, or torchrun's any.
  RestartOn restart_on = RestartOn::kTransient;
  /// --replan-restart (docs/how-to/replan-restart.md): a worker's 82 is a re-plan request; the
  /// others get up to grace_period to exit 82 too (nothing is signalled meanwhile), then the
  /// group restarts on the recorded layout, at most max_replans times and not counted against
  /// max_restarts. Any other mix of codes is an ordinary failure. Off: 82 is reported as 1.
  bool replan_restart = false;
  int max_replans = 3;
  /// With replan_restart: the checkpoint folder; the re-plan needs a complete checkpoint that
  /// the attempt published in it (supervise/watchers/checkpoint_pointer.h) once every worker
  /// exited 82. Empty: not checked.
  std::string checkpoint_dir;
  int console_out = STDOUT_FILENO;
  int console_err = STDERR_FILENO;
  size_t tail_lines = 20;  ///< stderr lines kept for the termination log
  /// Called once hetrun's shutdown signals are blocked and read from the signalfd, before the
  /// first worker starts (hetrun run arms the rendezvous' SIGTERM on peer failure here).
  std::function<void()> on_signals_ready;
  /// Readable (level-triggered; never read here) when the whole job restarts because another
  /// node's workers failed restartably (hetrun run's rendezvous, issue 15 item 6): the running
  /// attempt is stopped like a failure (SIGTERM, SIGKILL at the grace deadline) and ends as
  /// Kind::kJobRestart, restarted within the same --max-restarts budget. -1: none.
  int restart_fd = -1;
  /// What the restart_fd stands for, for the failure report ("node 1: rank 3 exited with 75").
  std::function<std::string()> restart_reason;
  /// With replan_restart: whether the restart the restart_fd announces is another node's
  /// re-plan. Then this node's workers are not stopped: they are saving the same checkpoint and
  /// get up to grace_period to exit 82, as after a local 82.
  std::function<bool()> restart_is_replan;
  /// --fail-slow: a worker the tuner reports fail-slow leaves a one-line report in the run
  /// folder (hetrun/tuner/rank_metrics.h, FailSlowReportPath); the supervisor logs it once per
  /// attempt with this node and the worker's GPU. With fail_slow_exit it then stops every worker
  /// and ends with 83, bypassing local restarts (docs/ARCHITECTURE.md §5.10).
  bool fail_slow_exit = false;
  /// Every worker of an attempt must have exited this long after the attempt started; past it,
  /// the group is stopped like a hang and the attempt ends as Kind::kDeadline with 75 (the
  /// collective check's deadline, docs/ARCHITECTURE.md §5.11). Zero: no deadline.
  std::chrono::milliseconds attempt_deadline{0};
  int node_rank = 0;
  std::vector<std::string> gpu_names;   ///< per local rank, for the report ("" or absent: unknown)
  SupervisionStatus* status = nullptr;  ///< refreshed every turn when set
  PollParticipant* poll_participant = nullptr;  ///< polled with the pipes when set
};

/// The workers of one attempt; `restart_count` is 0 for the first; `replan`: the attempt before
/// ended in an agreed re-plan (every local worker exited 82), not a restartable failure.
using WorkerSpecsFn =
    std::function<Result<std::vector<WorkerSpec>>(int restart_count, bool replan)>;

struct SupervisorOutcome {
  int exit_code = 0;  ///< 0, a worker's code (1 for 64/70/78/80/81), 128+N, 75, 81, 126, 127
  int restarts = 0;   ///< restarts done
  int replans = 0;    ///< re-plans by restart done (--replan-restart)
  bool failed = false;
  WorkerFailure failure;  ///< what ended the last attempt (when failed)
};

/// Runs workers until they all succeed, or until a failure that is not restarted (or the
/// budget is spent), or until hetrun is told to stop. Errors are system-call failures of the
/// supervisor itself (exit 70); worker failures are outcomes, not errors.
Result<SupervisorOutcome> Supervise(const SupervisorOptions& options, const WorkerSpecsFn& specs);

}  // namespace hetrun::launcher

// Why a local worker group ended badly: the exit code of the contract (docs/ARCHITECTURE.md §4.3),
// whether a restart may help, and the paragraph for the Kubernetes termination log.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

struct WorkerFailure {
  enum class Kind {
    kExited,          ///< a worker exited with a non-zero code
    kSignaled,        ///< a worker was killed by a signal
    kHang,            ///< a worker stopped beating (--hang-timeout)
    kSpawn,           ///< a worker could not be started (not found, not executable)
    kReceivedSignal,  ///< hetrun itself was asked to stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT)
    kJobRestart,      ///< another node's workers failed restartably: the whole job restarts
    kFailSlow,        ///< the tuner reported the worker fail-slow under --fail-slow exit (83)
    kDeadline,        ///< the attempt ran past SupervisorOptions::attempt_deadline (75)
  };
  /// What hetrun recognised beyond the exit status (ClassifyWorkerFailure).
  enum class Cause {
    kNone,
    kCudaOom,          ///< CUDA out of memory in the error file or stderr: exit 81, no restart
    kNcclTimeout,      ///< NCCL watchdog timeout: exit 75, restartable
    kCommFailure,      ///< a communication failure raised in Python (Gloo, c10d, NCCL): 75
    kReservedCode,     ///< the worker exited 64, 70, 78, 80, 81, 83 or 84: reported as 1
    kReplanRequested,  ///< the worker exited 82 (re-plan requested): reported as 1
    kRepeatedAbort,    ///< SIGABRT with the same last words as the attempt before: no restart
    kRepeatedFailure,  ///< --restart-on any: the same failure as the attempt before: no restart
    kOomKilled,        ///< SIGKILL while the memory cgroup's OOM-kill counter rose (oom_kills.h)
  };
  Kind kind = Kind::kExited;
  Cause cause = Cause::kNone;
  int worker_code = 0;  ///< the worker's own exit code (128+N for a signal) before any mapping
  int rank = -1;        ///< global rank of the worker (not for kReceivedSignal)
  int local_rank = -1;  ///< its local rank
  int exit_code = 0;    ///< the code hetrun exits with
  int signal = 0;       ///< kSignaled, kReceivedSignal
  std::chrono::milliseconds silence{0};       ///< kHang: time since the last beat
  std::chrono::milliseconds hang_timeout{0};  ///< kHang: --hang-timeout; kDeadline: the deadline
  /// kHang: the worker never beat; hang_timeout is then the start-up timeout (--startup-timeout).
  bool before_first_beat = false;
  std::string detail;                     ///< kSpawn: the exec error; kOomKilled: the limit
  std::vector<std::string> stderr_tail;   ///< the worker's last stderr lines, oldest first
  std::string error_message;              ///< from its TORCHELASTIC_ERROR_FILE, if any
  std::vector<std::string> error_frames;  ///< the innermost traceback frames of that file
  int restarts = 0;                       ///< restarts of the local group before this one
  std::string not_restarted;  ///< why a restart it allowed could not start (a full disk)
  /// --replan-restart: every local worker exited 82 and the checkpoint is complete (the group
  /// restarts on the recorded layout); false for an 82 not acted on, whose reason is `detail`.
  bool replan_agreed = false;
};

/// One line: "rank 1 (local rank 1) was killed by SIGKILL (exit code 137)".
std::string FailureSummary(const WorkerFailure& failure);

/// The termination-log paragraph: "hetrun: " + summary + restarts, then the last stderr lines
/// (as many of the newest as fit), at most `max_bytes` bytes in all.
std::string TerminationReason(const WorkerFailure& failure, size_t max_bytes = 4096);

/// Which worker failures --max-restarts restarts (--restart-on, HETRUN_RESTART_ON).
enum class RestartOn {
  kTransient,  ///< signals, hangs, 75, NCCL watchdog and communication failures (default)
  kAny,        ///< torchrun's rule: any failure of a worker, with the repeated-failure stop
};

/// "transient" or "any" (--restart-on); anything else is an error naming both.
Result<RestartOn> ParseRestartOn(std::string_view text);

/// True when restarting the local group may help: a worker killed by a signal, a hang, an NCCL
/// watchdog timeout, a communication failure raised in Python, or a worker that exited 75
/// (transient). Never for hetrun's own shutdown, a spawn failure (126/127), CUDA out of memory,
/// a failure repeated the same way, or any other exit code (78, 80, 81 and user codes are
/// deterministic) -- unless `on` is kAny: then every exit and signal of a worker is restartable
/// too (torchrun's rule), except a failure repeated the same way.
bool IsRestartable(const WorkerFailure& failure, RestartOn on = RestartOn::kTransient);

/// Reads what the worker left (error_message, stderr_tail) and sets the cause and exit code:
/// CUDA out of memory -> 81; an NCCL watchdog timeout -> 75; a communication failure raised in
/// Python (Gloo's "Connection closed by peer", torch's DistNetworkError / DistBackendError,
/// NCCL's "unhandled system error" or "remote process exited") -> 75; a worker's own 64, 70, 78, 80
/// or 81 (hetrun's codes: usage, internal, config, arch mismatch, memory) -> 1, so that a policy
/// keyed on hetrun's codes never mistakes a worker's exit for hetrun's verdict; a worker's 82
/// (re-plan requested) -> 1 as well, with its own reason. A worker's own 75 keeps its meaning
/// (transient). Only for kExited and kSignaled failures.
void ClassifyWorkerFailure(WorkerFailure& failure);

/// The words that identify an abort ("SIGABRT" + the error message or last stderr line), to
/// tell an abort repeated the same way from a new one; empty when `failure` is no SIGABRT.
std::string AbortSignature(const WorkerFailure& failure);

/// The same for any exit or signal of a worker (rank, exit code, error message or last stderr
/// line): --restart-on any stops restarting a failure repeated the same way. Empty for a failure
/// that is no worker's exit or signal, and for a transient one (an NCCL watchdog timeout, a
/// communication failure, exit 75), which is a peer's symptom however often it repeats.
std::string FailureSignature(const WorkerFailure& failure);

}  // namespace hetrun::launcher

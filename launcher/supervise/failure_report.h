// Why a local worker group ended badly: the exit code of the contract (ARCHITECTURE.md §4.3),
// whether a restart may help, and the paragraph for the Kubernetes termination log.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hetrun::launcher {

struct WorkerFailure {
  enum class Kind {
    kExited,          ///< a worker exited with a non-zero code
    kSignaled,        ///< a worker was killed by a signal
    kHang,            ///< a worker stopped beating (--hang-timeout)
    kSpawn,           ///< a worker could not be started (not found, not executable)
    kReceivedSignal,  ///< hetrun itself was asked to stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT)
  };
  Kind kind = Kind::kExited;
  int rank = -1;                         ///< global rank of the worker (not for kReceivedSignal)
  int local_rank = -1;                   ///< its local rank
  int exit_code = 0;                     ///< the code hetrun exits with
  int signal = 0;                        ///< kSignaled, kReceivedSignal
  std::chrono::milliseconds silence{0};  ///< kHang: time since the last beat
  std::chrono::milliseconds hang_timeout{0};  ///< kHang: --hang-timeout
  std::string detail;                         ///< kSpawn: the exec error
  std::vector<std::string> stderr_tail;       ///< the worker's last stderr lines, oldest first
  int restarts = 0;                           ///< restarts of the local group before this one
};

/// One line: "rank 1 (local rank 1) was killed by SIGKILL (exit code 137)".
std::string FailureSummary(const WorkerFailure& failure);

/// The termination-log paragraph: "hetrun: " + summary + restarts, then the last stderr lines
/// (as many of the newest as fit), at most `max_bytes` bytes in all.
std::string TerminationReason(const WorkerFailure& failure, size_t max_bytes = 4096);

/// True when restarting the local group may help: a worker killed by a signal, a hang, or a
/// worker that exited 75 (transient). Never for hetrun's own shutdown, a spawn failure
/// (126/127) or any other exit code (78, 80, 81 and user codes are deterministic).
bool IsRestartable(const WorkerFailure& failure);

}  // namespace hetrun::launcher

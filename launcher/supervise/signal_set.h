// Synchronous signal handling for the supervisor (tini's rule: no work in asynchronous handlers).
// The signals hetrun acts on are blocked and read from a signalfd in the supervisor's poll loop;
// fault signals (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) are left alone. Children get every signal
// reset before exec (launcher/supervise/child_process.h).
//
// Which signal decides the exit code: the first shutdown signal handled (128 + N); later ones
// never change it. Signals read in one turn are handled in the order the signalfd gives them,
// which for standard signals pending together is lowest number first (SIGHUP 1, SIGINT 2,
// SIGQUIT 3, SIGTERM 15): a SIGTERM and a SIGINT that land within one turn (about a millisecond
// apart) give 130. They stay blocked when the set is destroyed, until hetrun exits: a signal
// that arrives after the supervisor's last read cannot kill hetrun and replace its exit code.
#pragma once

#include <signal.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {

/// Signals forwarded to every worker process group: SIGTERM, SIGINT, SIGHUP, SIGQUIT (which
/// also start a shutdown) and SIGUSR1, SIGUSR2 (notifications, e.g. Slurm's preemption notice).
std::span<const int> ForwardedSignals();

/// True for the forwarded signals that start a shutdown (TERM, INT, HUP, QUIT).
bool IsShutdownSignal(int signal);

/// "SIGTERM"; "signal 42" for numbers without a name.
std::string SignalName(int signal);

class SignalSet {
 public:
  /// Blocks ForwardedSignals() and SIGCHLD in this process, opens a non-blocking signalfd for
  /// them and ignores SIGPIPE (a closed console must not kill the supervisor). Call before any
  /// thread starts. The destructor closes the signalfd and leaves the signals blocked and
  /// SIGPIPE ignored (see above).
  static Result<std::unique_ptr<SignalSet>> Install();
  ~SignalSet();
  SignalSet(const SignalSet&) = delete;
  SignalSet& operator=(const SignalSet&) = delete;

  /// Readable when a signal is pending (poll it).
  int fd() const { return fd_.get(); }

  /// Every signal pending now, in arrival order; empty when none. Standard signals that
  /// arrive twice before being read are reported once (kernel semantics).
  Result<std::vector<int>> ReadPending();

 private:
  SignalSet() = default;
  UniqueFd fd_;
};

}  // namespace hetrun::launcher

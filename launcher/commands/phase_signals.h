// hetrun run's signal handling outside supervision: the preflight (GPU probe, image scan,
// rendezvous wait up to --rdzv-timeout) and node 0's final wait for the other nodes. The
// shutdown signals are blocked and read from a signalfd (supervise/signal_set.h) exactly as the
// supervisor does, so a SIGTERM is never lost (a PID 1 ignores a signal it has no handler for,
// but a blocked signal stays pending) and never kills hetrun by its default action. Waits poll
// Poll() between short slices and end at once; hetrun then exits 128 + the signal (143 for
// SIGTERM, 130 for SIGINT) with a termination-log line naming the phase.
#pragma once

#include <memory>
#include <string>

#include "hetrun/base/env.h"
#include "supervise/signal_set.h"

namespace hetrun::launcher {

class PhaseSignals {
 public:
  /// Blocks the signals (call before any thread starts); `phase` names where hetrun is.
  static Result<std::unique_ptr<PhaseSignals>> Install(std::string phase);

  void set_phase(std::string phase) { phase_ = std::move(phase); }
  const std::string& phase() const { return phase_; }

  /// The first shutdown signal (TERM, INT, HUP, QUIT) received so far, 0 when none; reads the
  /// pending ones. The first stays: a later signal never changes it. USR1/USR2 are logged and
  /// dropped (there is no worker to forward them to yet).
  int Poll();
  /// The phase the first shutdown signal arrived in.
  const std::string& signal_phase() const { return signal_phase_; }

  /// Logs, writes the termination log and returns the exit code (128 + signal) for the signal
  /// Poll() saw; `detail` adds what was being waited for.
  int Exit(const Environment& env, const std::string& detail) const;

 private:
  explicit PhaseSignals(std::unique_ptr<SignalSet> set, std::string phase)
      : set_(std::move(set)), phase_(std::move(phase)) {}
  std::unique_ptr<SignalSet> set_;
  std::string phase_;
  std::string signal_phase_;
  int first_ = 0;
};

}  // namespace hetrun::launcher

#include "commands/phase_signals.h"

#include <spdlog/spdlog.h>

#include "supervise/report/termination_log.h"

namespace hetrun::launcher {

Result<std::unique_ptr<PhaseSignals>> PhaseSignals::Install(std::string phase) {
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<SignalSet> set, SignalSet::Install());
  return std::unique_ptr<PhaseSignals>(new PhaseSignals(std::move(set), std::move(phase)));
}

int PhaseSignals::Poll() {
  Result<std::vector<int>> pending = set_->ReadPending();
  if (!pending.ok()) {
    spdlog::warn("{}", pending.status().message());
    return first_;
  }
  for (int signal : *pending) {
    if (IsShutdownSignal(signal)) {
      if (first_ == 0) {
        first_ = signal;
        signal_phase_ = phase_;
        spdlog::warn("received {} during {}: stopping", SignalName(signal), phase_);
      }
    } else if (signal != SIGCHLD) {
      spdlog::info("received {} during {}: no worker runs yet, dropped", SignalName(signal),
                   phase_);
    }
  }
  return first_;
}

int PhaseSignals::Exit(const Environment& env, const std::string& detail) const {
  int code = 128 + first_;
  std::string reason = "hetrun exited with " + std::to_string(code) + ": received " +
                       SignalName(first_) + " during " + signal_phase_ +
                       (detail.empty() ? "" : " (" + detail + ")") + "\n";
  spdlog::error("{}", reason.substr(0, reason.size() - 1));
  if (Status logged = WriteTerminationLog(env, reason.substr(0, kTerminationLogMaxBytes));
      !logged.ok()) {
    spdlog::warn("{}", logged.message());
  }
  return code;
}

}  // namespace hetrun::launcher

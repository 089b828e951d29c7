#include "supervise/failure_report.h"

#include <fmt/format.h>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"
#include "supervise/signal_set.h"
#include "supervise/termination_log.h"

namespace hetrun::launcher {

std::string FailureSummary(const WorkerFailure& failure) {
  std::string who = fmt::format("rank {} (local rank {})", failure.rank, failure.local_rank);
  switch (failure.kind) {
    case WorkerFailure::Kind::kExited:
      return fmt::format("{} exited with code {}", who, failure.exit_code);
    case WorkerFailure::Kind::kSignaled:
      return fmt::format("{} was killed by {} (exit code {})", who, SignalName(failure.signal),
                         failure.exit_code);
    case WorkerFailure::Kind::kHang:
      return fmt::format("{} sent no heartbeat for {} s (--hang-timeout {}); exit code {}", who,
                         failure.silence.count() / 1000, FormatDuration(failure.hang_timeout),
                         failure.exit_code);
    case WorkerFailure::Kind::kSpawn:
      return fmt::format("{} could not be started: {} (exit code {})", who, failure.detail,
                         failure.exit_code);
    case WorkerFailure::Kind::kReceivedSignal:
      return fmt::format("hetrun received {} and stopped the workers (exit code {})",
                         SignalName(failure.signal), failure.exit_code);
  }
  return "unknown failure";
}

std::string TerminationReason(const WorkerFailure& failure, size_t max_bytes) {
  std::string head = "hetrun: " + FailureSummary(failure);
  if (failure.restarts > 0) head += fmt::format(", after {} restart(s)", failure.restarts);
  head += ".\n";
  head = TruncateUtf8(head, max_bytes);
  if (failure.stderr_tail.empty()) return head;
  std::string intro = fmt::format("Last lines of rank {}'s stderr:\n", failure.rank);
  if (head.size() + intro.size() >= max_bytes) return head;
  // Keep the newest lines: walk back from the end while they fit.
  size_t budget = max_bytes - head.size() - intro.size();
  size_t first = failure.stderr_tail.size();
  size_t used = 0;
  while (first > 0) {
    size_t line_bytes = failure.stderr_tail[first - 1].size() + 1;
    if (used + line_bytes > budget) break;
    used += line_bytes;
    --first;
  }
  if (first == failure.stderr_tail.size()) return head;
  std::string reason = head + intro;
  for (size_t i = first; i < failure.stderr_tail.size(); ++i) {
    reason += failure.stderr_tail[i];
    reason += '\n';
  }
  return reason;
}

bool IsRestartable(const WorkerFailure& failure) {
  switch (failure.kind) {
    case WorkerFailure::Kind::kSignaled:
    case WorkerFailure::Kind::kHang:
      return true;
    case WorkerFailure::Kind::kExited:
      return failure.exit_code == kExitTransient;
    case WorkerFailure::Kind::kSpawn:
    case WorkerFailure::Kind::kReceivedSignal:
      return false;
  }
  return false;
}

}  // namespace hetrun::launcher

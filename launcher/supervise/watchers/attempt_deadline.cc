#include "supervise/watchers/attempt_deadline.h"

#include <spdlog/spdlog.h>

#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {

std::optional<WatchVerdict> AttemptDeadline::Check(WatchClock::time_point now,
                                                   std::span<const WatchedWorker> /*workers*/) {
  if (now < end_) return std::nullopt;
  WatchVerdict verdict;
  verdict.stuck = true;
  verdict.failure.kind = WorkerFailure::Kind::kDeadline;
  verdict.failure.exit_code = kExitTransient;
  verdict.failure.hang_timeout = deadline_;
  spdlog::error("{}; stopping every worker", FailureSummary(verdict.failure));
  return verdict;
}

}  // namespace hetrun::launcher

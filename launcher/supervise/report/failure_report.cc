#include "supervise/report/failure_report.h"

#include <fmt/format.h>
#include <signal.h>

#include <initializer_list>
#include <string_view>

#include "hetrun/base/exit_code.h"
#include "hetrun/base/units.h"
#include "supervise/report/termination_log.h"
#include "supervise/signal_set.h"

namespace hetrun::launcher {

namespace {

bool Contains(const WorkerFailure& failure, std::initializer_list<std::string_view> needles) {
  auto has = [&](std::string_view text) {
    for (std::string_view needle : needles) {
      if (text.find(needle) != std::string_view::npos) return true;
    }
    return false;
  };
  if (has(failure.error_message)) return true;
  for (const std::string& line : failure.stderr_tail) {
    if (has(line)) return true;
  }
  return false;
}

std::string FirstLine(std::string_view text, size_t max_bytes) {
  text = text.substr(0, text.find('\n'));
  return TruncateUtf8(text, max_bytes);
}

std::string KindSummary(const WorkerFailure& failure, const std::string& who);

std::string CauseSummary(const WorkerFailure& failure, const std::string& who) {
  std::string how = failure.kind == WorkerFailure::Kind::kSignaled
                        ? "was killed by " + SignalName(failure.signal)
                        : fmt::format("exited with code {}", failure.worker_code);
  switch (failure.cause) {
    case WorkerFailure::Cause::kCudaOom:
      return fmt::format("{} ran out of GPU memory (CUDA out of memory; it {}); exit code {}", who,
                         how, failure.exit_code);
    case WorkerFailure::Cause::kNcclTimeout:
      return fmt::format("{} hit an NCCL watchdog timeout (it {}); exit code {}", who, how,
                         failure.exit_code);
    case WorkerFailure::Cause::kCommFailure:
      return fmt::format("{} lost a peer (a communication failure; it {}); exit code {}", who, how,
                         failure.exit_code);
    case WorkerFailure::Cause::kReservedCode:
      return fmt::format(
          "{} exited with code {}, a code hetrun reserves for its own verdicts "
          "(64, 70, 78, 80, 81, 83, 84); reported as exit code {}",
          who, failure.worker_code, failure.exit_code);
    case WorkerFailure::Cause::kReplanRequested:
      if (!failure.detail.empty()) {
        return fmt::format(
            "{} exited with code 82 (re-plan requested), not acted on: {}; reported as exit "
            "code {}",
            who, failure.detail, failure.exit_code);
      }
      return fmt::format(
          "{} exited with code 82 (re-plan requested), which this hetrun run does not act "
          "on (hetrun run --replan-restart does); reported as exit code {}",
          who, failure.exit_code);
    case WorkerFailure::Cause::kRepeatedAbort:
      return fmt::format(
          "{} was killed by SIGABRT the same way as in the attempt before; not "
          "restarting (exit code {})",
          who, failure.exit_code);
    case WorkerFailure::Cause::kRepeatedFailure:
      return fmt::format(
          "{} {} the same way as in the attempt before; not restarting (--restart-on any, exit "
          "code {})",
          who, how, failure.exit_code);
    case WorkerFailure::Cause::kOomKilled:
      return fmt::format("{} was killed by the OOM killer (SIGKILL; {}); exit code {}", who,
                         failure.detail, failure.exit_code);
    case WorkerFailure::Cause::kNone:
      break;
  }
  return "";
}

}  // namespace

std::string FailureSummary(const WorkerFailure& failure) {
  std::string who = fmt::format("rank {} (local rank {})", failure.rank, failure.local_rank);
  std::string summary = CauseSummary(failure, who);
  if (summary.empty()) summary = KindSummary(failure, who);
  if (!failure.error_message.empty()) summary += ": " + FirstLine(failure.error_message, 300);
  return summary;
}

namespace {

std::string KindSummary(const WorkerFailure& failure, const std::string& who) {
  switch (failure.kind) {
    case WorkerFailure::Kind::kExited:
      return fmt::format("{} exited with code {}", who, failure.exit_code);
    case WorkerFailure::Kind::kSignaled:
      return fmt::format("{} was killed by {} (exit code {})", who, SignalName(failure.signal),
                         failure.exit_code);
    case WorkerFailure::Kind::kHang:
      if (failure.before_first_beat) {
        return fmt::format(
            "{} sent no first heartbeat within {} of its start (--startup-timeout); exit code {}",
            who, FormatDuration(failure.hang_timeout), failure.exit_code);
      }
      return fmt::format("{} sent no heartbeat for {} s (--hang-timeout {}); exit code {}", who,
                         failure.silence.count() / 1000, FormatDuration(failure.hang_timeout),
                         failure.exit_code);
    case WorkerFailure::Kind::kSpawn:
      return fmt::format("{} could not be started: {} (exit code {})", who, failure.detail,
                         failure.exit_code);
    case WorkerFailure::Kind::kReceivedSignal:
      return fmt::format("hetrun received {} and stopped the workers (exit code {})",
                         SignalName(failure.signal), failure.exit_code);
    case WorkerFailure::Kind::kJobRestart:
      return fmt::format("the job restarts (another node's workers failed: {}); exit code {}",
                         failure.detail, failure.exit_code);
    case WorkerFailure::Kind::kFailSlow:
      return fmt::format("fail-slow: {} {}; stopping the job (--fail-slow exit, exit code {})", who,
                         failure.detail, failure.exit_code);
    case WorkerFailure::Kind::kDeadline:
      return fmt::format("the workers did not finish within {}; exit code {}",
                         FormatDuration(failure.hang_timeout), failure.exit_code);
  }
  return "unknown failure";
}

}  // namespace

std::string TerminationReason(const WorkerFailure& failure, size_t max_bytes) {
  std::string head = "hetrun: " + FailureSummary(failure);
  if (failure.restarts > 0) head += fmt::format(", after {} restart(s)", failure.restarts);
  if (!failure.not_restarted.empty()) head += "; not restarted: " + failure.not_restarted;
  head += ".\n";
  if (!failure.error_frames.empty()) {
    head += fmt::format("Last frames of rank {} (TORCHELASTIC_ERROR_FILE):\n", failure.rank);
    for (const std::string& frame : failure.error_frames) head += "  " + frame + "\n";
  }
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

Result<RestartOn> ParseRestartOn(std::string_view text) {
  if (text == "transient") return RestartOn::kTransient;
  if (text == "any") return RestartOn::kAny;
  return InvalidArgumentError("must be transient or any");
}

bool IsRestartable(const WorkerFailure& failure, RestartOn on) {
  switch (failure.cause) {
    case WorkerFailure::Cause::kRepeatedAbort:
    case WorkerFailure::Cause::kRepeatedFailure:
      return false;
    case WorkerFailure::Cause::kCudaOom:
    case WorkerFailure::Cause::kReservedCode:
      return on == RestartOn::kAny;
    case WorkerFailure::Cause::kReplanRequested:  // --replan-restart's business, never a restart
      return false;
    case WorkerFailure::Cause::kNcclTimeout:
    case WorkerFailure::Cause::kCommFailure:
    case WorkerFailure::Cause::kOomKilled:  // as any SIGKILL: restarts stay bounded by
                                            // --max-restarts
      return true;
    case WorkerFailure::Cause::kNone:
      break;
  }
  switch (failure.kind) {
    case WorkerFailure::Kind::kSignaled:
    case WorkerFailure::Kind::kHang:
    case WorkerFailure::Kind::kJobRestart:
      return true;
    case WorkerFailure::Kind::kExited:
      return on == RestartOn::kAny || failure.exit_code == kExitTransient;
    case WorkerFailure::Kind::kSpawn:
    case WorkerFailure::Kind::kReceivedSignal:
    case WorkerFailure::Kind::kFailSlow:  // the job restarts elsewhere (83), never in place
    case WorkerFailure::Kind::kDeadline:  // a one-off run (the collective check), never repeated
      return false;
  }
  return false;
}

}  // namespace hetrun::launcher

namespace hetrun::launcher {

namespace {

// What torch, Gloo and NCCL raise in Python when a peer is gone or the network failed: the
// symptom of another rank's failure (or of the network), not of this worker's code. NCCL's
// "invalid usage" and "invalid argument" are errors of the program, even inside a DistBackendError.
bool IsCommunicationFailure(const WorkerFailure& failure) {
  if (!Contains(failure,
                {"Connection closed by peer", "Connection reset by peer", "DistNetworkError",
                 "DistBackendError", "unhandled system error", "remote process exited"})) {
    return false;
  }
  return !Contains(failure, {"invalid usage", "invalid argument"});
}

}  // namespace

void ClassifyWorkerFailure(WorkerFailure& failure) {
  using Kind = WorkerFailure::Kind;
  using Cause = WorkerFailure::Cause;
  if (failure.kind != Kind::kExited && failure.kind != Kind::kSignaled) return;
  failure.worker_code = failure.exit_code;
  if (Contains(failure, {"CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory",
                         "CUBLAS_STATUS_ALLOC_FAILED"})) {
    failure.cause = Cause::kCudaOom;
    failure.exit_code = kExitMemory;
    return;
  }
  if (Contains(failure, {"Watchdog caught collective operation timeout",
                         "watchdog thread terminated with exception", "NCCL watchdog timeout",
                         "ProcessGroupNCCL's watchdog got stuck"})) {
    failure.cause = Cause::kNcclTimeout;
    failure.exit_code = kExitTransient;
    return;
  }
  if (failure.kind == Kind::kExited && failure.exit_code == kExitReplanRequested) {
    failure.cause = Cause::kReplanRequested;
    failure.exit_code = kExitWorkerReservedCode;
    return;
  }
  if (IsCommunicationFailure(failure)) {
    failure.cause = Cause::kCommFailure;
    failure.exit_code = kExitTransient;
    return;
  }
  if (failure.kind == Kind::kExited && IsReservedExitCode(failure.exit_code)) {
    failure.cause = Cause::kReservedCode;
    failure.exit_code = kExitWorkerReservedCode;
  }
}

std::string AbortSignature(const WorkerFailure& failure) {
  if (failure.kind != WorkerFailure::Kind::kSignaled || failure.signal != SIGABRT) return "";
  std::string words = failure.error_message;
  if (words.empty() && !failure.stderr_tail.empty()) words = failure.stderr_tail.back();
  return fmt::format("rank {} SIGABRT: {}", failure.rank, words);
}

std::string FailureSignature(const WorkerFailure& failure) {
  using Kind = WorkerFailure::Kind;
  using Cause = WorkerFailure::Cause;
  if (failure.kind != Kind::kExited && failure.kind != Kind::kSignaled) return "";
  if (failure.cause == Cause::kNcclTimeout || failure.cause == Cause::kCommFailure) return "";
  if (failure.kind == Kind::kExited && failure.worker_code == kExitTransient) return "";
  std::string words = failure.error_message;
  if (words.empty() && !failure.stderr_tail.empty()) words = failure.stderr_tail.back();
  return fmt::format("rank {} code {}: {}", failure.rank, failure.worker_code, words);
}

}  // namespace hetrun::launcher

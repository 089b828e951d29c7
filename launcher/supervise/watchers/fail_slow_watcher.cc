#include "supervise/watchers/fail_slow_watcher.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "hetrun/base/exit_code.h"
#include "hetrun/tuner/rank_metrics.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {
namespace {

/// The first line of a fail-slow report (never through a symlink; at most 1 KiB); "" when absent.
std::string ReadFailSlowReport(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return "";
  char buffer[1024];
  ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
  if (n <= 0) return "";
  std::string text(buffer, static_cast<size_t>(n));
  return text.substr(0, text.find('\n'));
}

}  // namespace

FailSlowWatcher::FailSlowWatcher(FailSlowWatch watch, size_t workers)
    : watch_(std::move(watch)), reports_(workers) {}

void FailSlowWatcher::Arm(size_t worker, int rank) {
  if (worker >= reports_.size()) return;
  reports_[worker].path = tuner::FailSlowReportPath(watch_.run_dir, rank);
  reports_[worker].seen = false;
  std::error_code error;
  std::filesystem::remove(reports_[worker].path, error);  // an attempt starts healthy
}

std::optional<WatchClock::time_point> FailSlowWatcher::NextCheck() const {
  if (reports_.empty()) return std::nullopt;
  return next_check_;
}

std::optional<WatchVerdict> FailSlowWatcher::Check(WatchClock::time_point now,
                                                   std::span<const WatchedWorker> workers) {
  if (now < next_check_) return std::nullopt;
  next_check_ = now + std::chrono::milliseconds(1000);
  for (size_t i = 0; i < workers.size() && i < reports_.size(); ++i) {
    Report& report = reports_[i];
    if (!workers[i].running || report.seen || report.path.empty()) continue;
    std::string text = ReadFailSlowReport(report.path);
    if (text.empty()) continue;
    report.seen = true;
    const size_t local = static_cast<size_t>(workers[i].local_rank);
    const std::string gpu = local < watch_.gpu_names.size() && !watch_.gpu_names[local].empty()
                                ? watch_.gpu_names[local]
                                : "unknown";
    WatchVerdict verdict;
    WorkerFailure& failure = verdict.failure;
    failure.kind = WorkerFailure::Kind::kFailSlow;
    failure.rank = workers[i].rank;
    failure.local_rank = workers[i].local_rank;
    failure.exit_code = kExitFailSlow;
    failure.detail =
        fmt::format("on node {}, GPU {} {}", watch_.node_rank, gpu, text.substr(0, 400));
    if (!watch_.exit) {
      spdlog::warn("fail-slow: rank {} (local rank {}) {}; balancing on (--fail-slow warn)",
                   failure.rank, failure.local_rank, failure.detail);
      continue;
    }
    spdlog::error("{}", FailureSummary(failure));
    return verdict;
  }
  return std::nullopt;
}

}  // namespace hetrun::launcher

#include "hetrun/tuner/rank_metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "hetrun/tuner/window_loop.h"

namespace hetrun::tuner {

std::string RankMetricsPath(const std::string& run_dir, int rank) {
  return run_dir + "/metrics/rank_" + std::to_string(rank) + ".prom";
}

std::string FailSlowReportPath(const std::string& run_dir, int rank) {
  return run_dir + "/fail_slow/rank_" + std::to_string(rank);
}

std::string FailSlowText(const FailSlowVerdict& v, const std::string& model, int64_t windows,
                         int64_t window) {
  const bool by_peers = std::string_view(v.basis) == "model";
  char text[320];
  std::snprintf(text, sizeof(text),
                "(model %s): %.1f ms at %lld samples, expected %.1f ms from %s (%.2fx) for %lld "
                "windows (window %lld)",
                model.empty() ? "unknown" : model.c_str(), v.measured_ms,
                static_cast<long long>(v.reference_samples), v.expected_ms,
                by_peers ? "its model's median" : "its own history", v.ratio,
                static_cast<long long>(windows), static_cast<long long>(window));
  return text;
}

std::string RankMetricsText(const WindowReport& report, int group_rank, int64_t share_changes) {
  const size_t r = static_cast<size_t>(group_rank);
  const RankWindow mine = r < report.ranks.size() ? report.ranks[r] : RankWindow{};
  const double share = r < report.shares_next.size() ? report.shares_next[r] : 0;
  const double used = r < report.shares_used.size() ? report.shares_used[r] : 0;
  const FailSlowVerdict health = r < report.health.size() ? report.health[r] : FailSlowVerdict{};
  const double values[] = {
      mine.step_ms / 1000.0,
      mine.compute_ms / 1000.0,
      mine.step_ms > 0 ? mine.wait_ms / mine.step_ms : 0,
      share,
      mine.step_ms > 0 ? used / (mine.step_ms / 1000.0) : 0,
      static_cast<double>(report.window),
      static_cast<double>(share_changes),
      report.efficiency,
      report.samples_per_s,
      report.ideal_samples_per_s,
      report.overhead_fraction(),
      health.ratio,
      health.fail_slow ? 1.0 : 0.0,
  };
  static_assert(std::size(values) == std::size(kRankMetrics));
  std::string text;
  for (size_t i = 0; i < std::size(values); ++i) {
    char value[64];
    std::snprintf(value, sizeof(value), "%.9g", values[i]);
    text += std::string(kRankMetrics[i].name) + " " + value + "\n";
  }
  return text;
}

RankMetricsWriter RankMetricsWriter::FromEnvironment(const Environment& env, int fallback_rank) {
  RankMetricsWriter writer;
  std::optional<std::string> run_dir = env.Get("HETRUN_RUN_DIR");
  if (!run_dir || run_dir->empty()) return writer;
  Result<std::optional<int64_t>> rank = env.GetInt("RANK");
  int global = rank.ok() && *rank ? static_cast<int>(**rank) : fallback_rank;
  writer.path_ = RankMetricsPath(*run_dir, global);
  return writer;
}

Status RankMetricsWriter::Write(const std::string& text) {
  if (path_.empty()) return Status::Ok();
  std::string dir = path_.substr(0, path_.rfind('/'));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    Status error = ErrnoError("mkdir", dir, errno).WithContext("rank metrics");
    path_.clear();
    return error;
  }
  std::string temporary = path_ + ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    Status error = ErrnoError("open", temporary, errno).WithContext("rank metrics");
    path_.clear();
    return error;
  }
  ssize_t written = ::write(fd, text.data(), text.size());
  int write_errno = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    Status error = ErrnoError("write", temporary, written < 0 ? write_errno : ENOSPC)
                       .WithContext("rank metrics");
    path_.clear();
    return error;
  }
  if (::rename(temporary.c_str(), path_.c_str()) != 0) {
    Status error = ErrnoError("rename", path_, errno).WithContext("rank metrics");
    path_.clear();
    return error;
  }
  return Status::Ok();
}

}  // namespace hetrun::tuner

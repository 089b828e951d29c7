#include "supervise/watchers/heartbeat_watcher.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {
namespace {

using std::chrono::milliseconds;

/// Creates (or truncates) `file` and sets its times to now: the start of a worker's clock.
Status ResetHeartbeat(const std::string& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open", file, errno).WithContext("heartbeat file");
  ::close(fd);
  if (::utimensat(AT_FDCWD, file.c_str(), nullptr, 0) != 0) {
    return ErrnoError("utimensat", file, errno).WithContext("heartbeat file");
  }
  return Status::Ok();
}

}  // namespace

bool HeartbeatWatcher::Mark::operator==(const Mark& o) const {
  return exists == o.exists && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec &&
         ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec && size == o.size;
}

HeartbeatWatcher::Mark HeartbeatWatcher::Mark::Of(const std::string& path) {
  Mark mark;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return mark;
  mark.exists = true;
  mark.mtime = st.st_mtim;
  mark.ctime = st.st_ctim;
  mark.size = st.st_size;
  return mark;
}

HeartbeatWatcher::HeartbeatWatcher(std::string run_dir, milliseconds hang_timeout, size_t workers,
                                   milliseconds startup_timeout)
    : run_dir_(std::move(run_dir)),
      hang_timeout_(hang_timeout),
      startup_timeout_(startup_timeout.count() > 0 ? startup_timeout : hang_timeout),
      beats_(workers) {}

Result<std::string> HeartbeatWatcher::Arm(size_t worker, int local_rank,
                                          WatchClock::time_point now) {
  if (worker >= beats_.size()) return InternalError("HeartbeatWatcher::Arm: no such worker");
  std::string dir = run_dir_ + "/heartbeat";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return ErrnoError("mkdir", dir, error.value()).WithContext("run folder");
  Beat& beat = beats_[worker];
  beat.path = dir + "/rank_" + std::to_string(local_rank);
  HETRUN_RETURN_IF_ERROR(ResetHeartbeat(beat.path));
  beat.mark = Mark::Of(beat.path);
  beat.last = now;
  beat.beaten = false;
  return beat.path;
}

double HeartbeatWatcher::SecondsSinceBeat(size_t worker, WatchClock::time_point now) const {
  if (worker >= beats_.size() || beats_[worker].path.empty()) return -1;
  return std::chrono::duration<double>(now - beats_[worker].last).count();
}

std::optional<WatchVerdict> HeartbeatWatcher::Check(WatchClock::time_point now,
                                                    std::span<const WatchedWorker> workers) {
  if (now < next_check_) return std::nullopt;
  milliseconds shortest = hang_timeout_.count() > 0 && startup_timeout_.count() > 0
                              ? std::min(hang_timeout_, startup_timeout_)
                              : std::max(hang_timeout_, startup_timeout_);
  next_check_ = now + std::min(milliseconds(1000), shortest / 4);
  for (size_t i = 0; i < workers.size() && i < beats_.size(); ++i) {
    Beat& beat = beats_[i];
    if (!workers[i].running || beat.path.empty()) continue;
    Mark mark = Mark::Of(beat.path);
    if (!(mark == beat.mark)) {
      beat.mark = mark;
      beat.last = now;
      beat.beaten = true;
      continue;
    }
    const milliseconds limit = beat.beaten ? hang_timeout_ : startup_timeout_;
    if (limit.count() == 0) continue;
    auto silence = std::chrono::duration_cast<milliseconds>(now - beat.last);
    if (silence <= limit) continue;
    WatchVerdict verdict;
    verdict.stuck = true;
    WorkerFailure& failure = verdict.failure;
    failure.kind = WorkerFailure::Kind::kHang;
    failure.rank = workers[i].rank;
    failure.local_rank = workers[i].local_rank;
    failure.exit_code = kExitTransient;
    failure.silence = silence;
    failure.hang_timeout = limit;
    failure.before_first_beat = !beat.beaten;
    spdlog::error("{}; stopping every worker", FailureSummary(failure));
    return verdict;
  }
  return std::nullopt;
}

}  // namespace hetrun::launcher

#include "supervise/report/oom_kills.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "hetrun/base/units.h"
#include "supervise/report/failure_report.h"

namespace hetrun::launcher {
namespace {

// cgroup v1 writes "unlimited" as the largest page-aligned value (9223372036854771712).
constexpr uint64_t kUnlimitedFrom = uint64_t{1} << 62;

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool IsDir(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::optional<uint64_t> ParseCount(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  Result<int64_t> value = ParseInt(text);
  if (!value.ok() || *value < 0) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

// The value of the "KEY N" line of a flat-keyed cgroup file (memory.events, memory.oom_control).
std::optional<uint64_t> KeyedValue(const std::string& text, std::string_view key) {
  for (std::string_view line : SplitOn(text, '\n')) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ') {
      return ParseCount(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

// The cgroup folder for PATH under `mount`; the mount's root when PATH is not there (a
// container's own cgroup mounted at the root, the host's path in /proc/self/cgroup).
std::optional<std::string> CgroupDir(const std::string& mount, std::string_view path,
                                     const char* marker) {
  std::string dir = mount + std::string(path);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (IsFile(dir + "/" + marker)) return dir;
  if (IsFile(mount + "/" + marker)) return mount;
  return std::nullopt;
}

std::optional<uint64_t> Limit(std::optional<uint64_t> value) {
  if (!value || *value >= kUnlimitedFrom) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::string> FindMemoryCgroup(const std::string& root) {
  std::string base = root == "/" ? "" : root;
  std::optional<std::string> table = ReadSmallFile(base + "/proc/self/cgroup");
  if (!table) return std::nullopt;
  std::optional<std::string_view> v1, v2;
  for (std::string_view line : SplitOn(*table, '\n')) {
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = line.substr(second + 1);
    if (line.substr(0, first) == "0" && controllers.empty()) v2 = path;
    for (std::string_view controller : SplitOn(controllers, ',')) {
      if (controller == "memory") v1 = path;
    }
  }
  // A hybrid layout (v1 and v2 side by side) keeps the memory controller in v1.
  if (v1 && IsDir(base + "/sys/fs/cgroup/memory")) {
    return CgroupDir(base + "/sys/fs/cgroup/memory", *v1, "memory.oom_control");
  }
  if (v2) return CgroupDir(base + "/sys/fs/cgroup", *v2, "memory.events");
  return std::nullopt;
}

std::optional<MemoryCgroupReading> ReadMemoryCgroup(const std::string& dir) {
  MemoryCgroupReading reading;
  if (std::optional<std::string> events = ReadSmallFile(dir + "/memory.events")) {
    std::optional<uint64_t> kills = KeyedValue(*events, "oom_kill");
    if (!kills) return std::nullopt;
    reading.oom_kills = *kills;
    reading.limit_file = dir + "/memory.max";
    std::optional<std::string> max = ReadSmallFile(reading.limit_file);
    if (max) reading.limit_bytes = Limit(ParseCount(*max));  // "max": unlimited
    return reading;
  }
  std::optional<std::string> control = ReadSmallFile(dir + "/memory.oom_control");
  if (!control) return std::nullopt;
  std::optional<uint64_t> kills = KeyedValue(*control, "oom_kill");
  if (!kills) return std::nullopt;
  reading.oom_kills = *kills;
  reading.limit_file = dir + "/memory.limit_in_bytes";
  std::optional<std::string> limit = ReadSmallFile(reading.limit_file);
  if (limit) reading.limit_bytes = Limit(ParseCount(*limit));
  if (!reading.limit_bytes) {
    // No limit here: the nearest ancestor's (a pod's cgroup above the container's).
    if (std::optional<std::string> stat = ReadSmallFile(dir + "/memory.stat")) {
      reading.limit_bytes = Limit(KeyedValue(*stat, "hierarchical_memory_limit"));
      if (reading.limit_bytes) reading.limit_file = dir + "/memory.stat hierarchical_memory_limit";
    }
  }
  return reading;
}

std::string DescribeMemoryLimit(const MemoryCgroupReading& reading) {
  if (!reading.limit_bytes) {
    return fmt::format("memory cgroup limit: none set ({})", reading.limit_file);
  }
  return fmt::format("memory cgroup limit: {} bytes ({}), from {}", *reading.limit_bytes,
                     FormatMiB(*reading.limit_bytes), reading.limit_file);
}

OomKillCounter::OomKillCounter(std::string root) : dir_(FindMemoryCgroup(root)) {
  Rebase();
}

void OomKillCounter::Rebase() {
  if (!dir_) return;
  if (std::optional<MemoryCgroupReading> reading = ReadMemoryCgroup(*dir_)) {
    seen_ = reading->oom_kills;
  }
}

void OomKillCounter::Classify(WorkerFailure& failure) {
  if (!dir_ || failure.kind != WorkerFailure::Kind::kSignaled || failure.signal != SIGKILL) return;
  std::optional<MemoryCgroupReading> reading = ReadMemoryCgroup(*dir_);
  if (!reading || reading->oom_kills <= seen_) return;
  ++seen_;
  failure.cause = WorkerFailure::Cause::kOomKilled;
  failure.detail = DescribeMemoryLimit(*reading);
}

}  // namespace hetrun::launcher

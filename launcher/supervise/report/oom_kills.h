// The memory cgroup's OOM-kill counter: was a worker that died by SIGKILL killed by the kernel's
// OOM killer at the cgroup's memory limit (a container's --memory, a pod's limits.memory)?
// docs/ARCHITECTURE.md §2.4. The kernel counts each victim in the cgroup it was charged to, which
// for a worker is hetrun's own (hetrun never moves its workers): cgroup v1's
// memory.oom_control ("oom_kill N"), cgroup v2's memory.events ("oom_kill N").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hetrun::launcher {

struct WorkerFailure;

/// One reading of this process's memory cgroup.
struct MemoryCgroupReading {
  uint64_t oom_kills = 0;               ///< the "oom_kill N" counter
  std::optional<uint64_t> limit_bytes;  ///< the cgroup's limit; nullopt when unlimited/unread
  std::string limit_file;               ///< the file the limit was read from
};

/// The folder of this process's memory cgroup, found from `root`/proc/self/cgroup (`root` is
/// "/" except in tests): cgroup v1's "N:memory:PATH" line under `root`/sys/fs/cgroup/memory,
/// else cgroup v2's "0::PATH" line under `root`/sys/fs/cgroup. Inside a container the cgroup
/// file names the host's path while the container's own cgroup is mounted at the root, so when
/// PATH is absent the mount's root is taken. nullopt: no memory cgroup with a counter found.
std::optional<std::string> FindMemoryCgroup(const std::string& root);

/// The counter and limit of the memory cgroup in `dir` (v1 or v2, told by its files); nullopt
/// when the counter cannot be read (a kernel before 4.13 has no oom_kill line in v1).
std::optional<MemoryCgroupReading> ReadMemoryCgroup(const std::string& dir);

/// The OOM kills of this process's memory cgroup since the last look: one kill is taken per
/// worker killed by SIGKILL, so two workers killed at once are both reported.
class OomKillCounter {
 public:
  explicit OomKillCounter(std::string root = "/");

  /// Forgets kills counted so far (a new attempt starts); no-op without a counter.
  void Rebase();

  /// When `failure` is a SIGKILL and the counter rose since the last Rebase or take: marks it
  /// as killed by the OOM killer (WorkerFailure::Cause::kOomKilled, the limit in `detail`).
  void Classify(WorkerFailure& failure);

 private:
  std::optional<std::string> dir_;
  uint64_t seen_ = 0;
};

/// "memory cgroup limit: 268435456 bytes (256 MiB), from .../memory.limit_in_bytes", or the
/// words for no limit.
std::string DescribeMemoryLimit(const MemoryCgroupReading& reading);

}  // namespace hetrun::launcher

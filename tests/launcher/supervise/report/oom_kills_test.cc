#include "supervise/report/oom_kills.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "run_process.h"
#include "supervise/report/failure_report.h"

namespace hetrun::launcher {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string OomControl(int kills) {
  return "oom_kill_disable 0\nunder_oom 0\noom_kill " + std::to_string(kills) + "\n";
}

std::string MemoryEvents(int kills) {
  return "low 0\nhigh 0\nmax 12\noom 2\noom_kill " + std::to_string(kills) + "\noom_group_kill 0\n";
}

// The hybrid layout of these machines: v1 controllers plus an empty v2 hierarchy.
constexpr const char* kHybridTable =
    "9:name=systemd:/\n4:memory:/libpod_parent/libpod-abc\n1:cpu:/\n0::/\n";

WorkerFailure Killed(int signal) {
  WorkerFailure failure;
  failure.kind = WorkerFailure::Kind::kSignaled;
  failure.signal = signal;
  failure.rank = 1;
  failure.local_rank = 1;
  failure.exit_code = 128 + signal;
  return failure;
}

TEST(OomKillsTest, FindsTheV1MemoryCgroupNamedInProcSelfCgroup) {
  testing::TempDir root;
  Write(root.path() + "/proc/self/cgroup", kHybridTable);
  std::string dir = root.path() + "/sys/fs/cgroup/memory/libpod_parent/libpod-abc";
  Write(dir + "/memory.oom_control", OomControl(0));
  Write(root.path() + "/sys/fs/cgroup/memory/memory.oom_control", OomControl(0));
  EXPECT_EQ(FindMemoryCgroup(root.path()), dir);
}

TEST(OomKillsTest, TakesTheMountRootInsideAContainerWhereTheHostPathIsAbsent) {
  testing::TempDir root;
  Write(root.path() + "/proc/self/cgroup", kHybridTable);
  Write(root.path() + "/sys/fs/cgroup/memory/memory.oom_control", OomControl(0));
  EXPECT_EQ(FindMemoryCgroup(root.path()), root.path() + "/sys/fs/cgroup/memory");
}

TEST(OomKillsTest, FindsTheV2CgroupWhenNoV1MemoryControllerIsMounted) {
  testing::TempDir root;
  Write(root.path() + "/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  std::string dir = root.path() + "/sys/fs/cgroup/kubepods/pod1/ctr";
  Write(dir + "/memory.events", MemoryEvents(0));
  EXPECT_EQ(FindMemoryCgroup(root.path()), dir);
  // A private cgroup namespace: "0::/" with the container's cgroup at the root.
  testing::TempDir ns;
  Write(ns.path() + "/proc/self/cgroup", "0::/\n");
  Write(ns.path() + "/sys/fs/cgroup/memory.events", MemoryEvents(0));
  EXPECT_EQ(FindMemoryCgroup(ns.path()), ns.path() + "/sys/fs/cgroup");
}

TEST(OomKillsTest, FindsNothingWithoutACounterFile) {
  testing::TempDir root;
  EXPECT_EQ(FindMemoryCgroup(root.path()), std::nullopt);  // no /proc/self/cgroup
  Write(root.path() + "/proc/self/cgroup", kHybridTable);
  std::filesystem::create_directories(root.path() + "/sys/fs/cgroup/memory");
  EXPECT_EQ(FindMemoryCgroup(root.path()), std::nullopt);
}

TEST(OomKillsTest, ReadsTheV1CounterAndLimit) {
  testing::TempDir dir;
  Write(dir.path() + "/memory.oom_control", OomControl(3));
  Write(dir.path() + "/memory.limit_in_bytes", "268435456\n");
  std::optional<MemoryCgroupReading> reading = ReadMemoryCgroup(dir.path());
  ASSERT_TRUE(reading);
  EXPECT_EQ(reading->oom_kills, 3u);
  EXPECT_EQ(reading->limit_bytes, 268435456u);
  EXPECT_EQ(DescribeMemoryLimit(*reading), "memory cgroup limit: 268435456 bytes (256 MiB), from " +
                                               dir.path() + "/memory.limit_in_bytes");
}

TEST(OomKillsTest, TakesTheAncestorsLimitWhenTheV1CgroupHasNone) {
  testing::TempDir dir;
  Write(dir.path() + "/memory.oom_control", OomControl(1));
  Write(dir.path() + "/memory.limit_in_bytes", "9223372036854771712\n");
  Write(dir.path() + "/memory.stat", "cache 0\nhierarchical_memory_limit 1073741824\n");
  std::optional<MemoryCgroupReading> reading = ReadMemoryCgroup(dir.path());
  ASSERT_TRUE(reading);
  EXPECT_EQ(reading->limit_bytes, 1073741824u);
  EXPECT_NE(DescribeMemoryLimit(*reading).find("hierarchical_memory_limit"), std::string::npos);
  Write(dir.path() + "/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
  reading = ReadMemoryCgroup(dir.path());
  ASSERT_TRUE(reading);
  EXPECT_EQ(reading->limit_bytes, std::nullopt);
  EXPECT_NE(DescribeMemoryLimit(*reading).find("none set"), std::string::npos);
}

TEST(OomKillsTest, ReadsTheV2CounterAndLimit) {
  testing::TempDir dir;
  Write(dir.path() + "/memory.events", MemoryEvents(2));
  Write(dir.path() + "/memory.max", "max\n");
  std::optional<MemoryCgroupReading> reading = ReadMemoryCgroup(dir.path());
  ASSERT_TRUE(reading);
  EXPECT_EQ(reading->oom_kills, 2u);
  EXPECT_EQ(reading->limit_bytes, std::nullopt);
  Write(dir.path() + "/memory.max", "536870912\n");
  EXPECT_EQ(ReadMemoryCgroup(dir.path())->limit_bytes, 536870912u);
}

TEST(OomKillsTest, AKernelWithoutTheCounterLineGivesNoReading) {
  testing::TempDir dir;
  Write(dir.path() + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  EXPECT_EQ(ReadMemoryCgroup(dir.path()), std::nullopt);
}

TEST(OomKillsTest, MarksASigkillAsAnOomKillOnlyWhenTheCounterRose) {
  testing::TempDir root;
  Write(root.path() + "/proc/self/cgroup", kHybridTable);
  std::string control = root.path() + "/sys/fs/cgroup/memory/memory.oom_control";
  Write(control, OomControl(4));
  Write(root.path() + "/sys/fs/cgroup/memory/memory.limit_in_bytes", "268435456\n");
  OomKillCounter counter(root.path());

  WorkerFailure plain = Killed(SIGKILL);
  counter.Classify(plain);  // the counter has not moved since the counter was made
  EXPECT_EQ(plain.cause, WorkerFailure::Cause::kNone);

  Write(control, OomControl(6));  // two victims
  WorkerFailure term = Killed(SIGTERM);
  counter.Classify(term);
  EXPECT_EQ(term.cause, WorkerFailure::Cause::kNone);  // only a SIGKILL can be the OOM killer's
  for (int i = 0; i < 2; ++i) {
    WorkerFailure failure = Killed(SIGKILL);
    counter.Classify(failure);
    EXPECT_EQ(failure.cause, WorkerFailure::Cause::kOomKilled) << i;
    EXPECT_NE(failure.detail.find("268435456 bytes"), std::string::npos) << failure.detail;
  }
  WorkerFailure third = Killed(SIGKILL);
  counter.Classify(third);  // both kills are taken
  EXPECT_EQ(third.cause, WorkerFailure::Cause::kNone);

  Write(control, OomControl(7));
  counter.Rebase();  // a new attempt: kills before it are not its workers'
  WorkerFailure after = Killed(SIGKILL);
  counter.Classify(after);
  EXPECT_EQ(after.cause, WorkerFailure::Cause::kNone);
}

TEST(OomKillsTest, WithoutACgroupNothingIsMarked) {
  testing::TempDir root;
  OomKillCounter counter(root.path());
  WorkerFailure failure = Killed(SIGKILL);
  counter.Classify(failure);
  EXPECT_EQ(failure.cause, WorkerFailure::Cause::kNone);
}

TEST(OomKillsTest, TheReportAndTerminationLogSayOomKillerWithTheLimit) {
  WorkerFailure failure = Killed(SIGKILL);
  failure.cause = WorkerFailure::Cause::kOomKilled;
  failure.detail = "memory cgroup limit: 268435456 bytes (256 MiB), from /x/memory.limit_in_bytes";
  failure.stderr_tail = {"allocating"};
  ClassifyWorkerFailure(failure);  // keeps the cause, the code stays the signal's
  EXPECT_EQ(failure.cause, WorkerFailure::Cause::kOomKilled);
  EXPECT_EQ(failure.exit_code, 137);
  EXPECT_EQ(FailureSummary(failure),
            "rank 1 (local rank 1) was killed by the OOM killer (SIGKILL; memory cgroup limit: "
            "268435456 bytes (256 MiB), from /x/memory.limit_in_bytes); exit code 137");
  std::string reason = TerminationReason(failure);
  EXPECT_EQ(reason.rfind("hetrun: rank 1 (local rank 1) was killed by the OOM killer", 0), 0u)
      << reason;
  EXPECT_NE(reason.find("allocating"), std::string::npos);
  EXPECT_TRUE(IsRestartable(failure));  // as any SIGKILL, within --max-restarts
}

}  // namespace
}  // namespace hetrun::launcher

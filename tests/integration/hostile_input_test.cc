// Untrusted input files through the real binary (issue 15, item 9): a FIFO, /dev/zero or a
// directory is refused with exit 78 and a message naming it (never a hang or an endless read),
// deeply nested JSON is exit 78 (never a stack overflow), a crafted ELF file is checked in a
// bounded time.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessResult;

const std::string kModel = HETRUN_SOURCE_DIR "/examples/plan/seed-model.json";
const std::string kCluster = HETRUN_SOURCE_DIR "/examples/plan/seed-cluster.json";

ProcessResult Hetrun(std::vector<std::string> args) {
  args.insert(args.begin(), HETRUN_BINARY);
  testing::ProcessOptions options;
  options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}};
  options.timeout = std::chrono::seconds(60);
  return testing::RunProcess(args, options);
}

void ExpectRefused(const ProcessResult& r, const std::string& path, const std::string& words) {
  EXPECT_FALSE(r.timed_out) << "hetrun blocked on " << path;
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
}

TEST(HostileInputTest, FifoAsModelFileIsRefusedWith78InsteadOfBlocking) {
  testing::TempDir dir;
  std::string fifo = dir.path() + "/model.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused(Hetrun({"plan", "--cluster", kCluster, "--model", fifo}), fifo, "a FIFO");
}

TEST(HostileInputTest, DevZeroAsClusterOrScenarioIsRefusedWith78) {
  ExpectRefused(Hetrun({"plan", "--cluster", "/dev/zero", "--model", kModel}), "/dev/zero",
                "a character device");
  ExpectRefused(Hetrun({"simulate", "--scenario", "/dev/zero"}), "/dev/zero", "a character device");
}

TEST(HostileInputTest, FifoAsScenarioIsRefusedWith78InsteadOfBlocking) {
  testing::TempDir dir;
  std::string fifo = dir.path() + "/scenario.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused(Hetrun({"simulate", "--scenario", fifo}), fifo, "a FIFO");
}

TEST(HostileInputTest, FifoGivenToCheckIsRefusedInsteadOfBlocking) {
  testing::TempDir dir;
  std::string fifo = dir.path() + "/libfoo.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ProcessResult r = Hetrun({"check", "--target-arch", "8.0", fifo});
  EXPECT_FALSE(r.timed_out) << "hetrun check blocked on a FIFO";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("not a regular file") + r.err.find("not a regular file"),
            2 * std::string::npos)
      << r.out << r.err;
}

TEST(HostileInputTest, DeeplyNestedJsonIsExit78NotACrash) {
  testing::TempDir dir;
  std::string nested = dir.WriteFile("nested.json", std::string(100'000, '['));
  ProcessResult plan = Hetrun({"plan", "--cluster", kCluster, "--model", nested});
  EXPECT_EQ(plan.exit_code, 78) << plan.err;
  EXPECT_NE(plan.err.find("nested deeper than 64"), std::string::npos) << plan.err;
  std::string scenario =
      dir.WriteFile("scenario.json", "{\"stages\": " + std::string(100'000, '['));
  ProcessResult simulate = Hetrun({"simulate", "--scenario", scenario});
  EXPECT_EQ(simulate.exit_code, 78) << simulate.err;
  EXPECT_NE(simulate.err.find("nested deeper than 64"), std::string::npos) << simulate.err;
}

TEST(HostileInputTest, JsonInputOverTheSizeLimitIsExit78) {
  testing::TempDir dir;
  std::string big = dir.WriteFile("big.json", std::string((16u << 20) + 1, ' '));
  ProcessResult r = Hetrun({"plan", "--cluster", kCluster, "--model", big});
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("larger than"), std::string::npos) << r.err;
}

TEST(HostileInputTest, CraftedElfWithManyWrappersAndRelocationsIsChecked) {
  // 21k fatbin wrappers x 21k relocations: the lookup per wrapper made this 26 s (1 MiB).
  const std::string crafted =
      HETRUN_SOURCE_DIR "/tests/fuzz/corpus/fatbin/elf_wrappers_times_relocations";
  ProcessResult r = Hetrun({"check", "--target-arch", "8.0", crafted});
  EXPECT_FALSE(r.timed_out) << "the section scan must be linear";
  EXPECT_NE(r.exit_code, 70) << r.err;
}

}  // namespace
}  // namespace hetrun

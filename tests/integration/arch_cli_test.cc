// `hetrun inspect` and `hetrun check` as a user runs them: real nvcc fixtures, fake GPUs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessOptions;
using testing::RunProcess;

std::string Fixture(const std::string& name) {
  return std::string(HETRUN_ARCH_FIXTURE_DIR) + "/" + name;
}

ProcessOptions CleanEnv(std::map<std::string, std::string> env = {}) {
  ProcessOptions options;
  env["PATH"] = "/usr/bin:/bin";
  env["HETRUN_TERMINATION_LOG"] = "/dev/null";
  options.env = env;
  return options;
}

class ArchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(HETRUN_ARCH_FIXTURE_DIR).empty()) {
      GTEST_SKIP() << "nvcc not found at configure time: the fatbin fixtures were not built";
    }
  }
};

TEST_F(ArchCliTest, CheckFailsWithExit80ForSm90OnlyExtensionOnA100) {
  auto r = RunProcess({HETRUN_BINARY, "check", "--json", Fixture("libsm90.so")},
                      CleanEnv({{"HETRUN_FAKE_GPUS", "A100-SXM4-80GB:8.0:81049,H100:9.0:81090"}}));
  EXPECT_EQ(r.exit_code, 80) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_FALSE(json["ok"].get<bool>());
  EXPECT_EQ(json["targets"], nlohmann::json({"8.0", "9.0"}));
  EXPECT_EQ(json["files"][0]["verdicts"]["8.0"], "missing");
  EXPECT_EQ(json["files"][0]["verdicts"]["9.0"], "sass");
  EXPECT_TRUE(json["memory"].is_object());
}

TEST_F(ArchCliTest, CheckPassesForMultiArchBuildAndPrintsTable) {
  auto r = RunProcess({HETRUN_BINARY, "check", "--target-arch", "8.0,9.0,10.0", "--arch-list",
                       "8.0;9.0+PTX", "--scan", Fixture("libmulti.so")},
                      CleanEnv());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ptx-jit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("via 9.0+PTX"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped (no GPU)"), std::string::npos) << r.out;
}

TEST_F(ArchCliTest, PartialFailsOnlyWhenStrict) {
  const std::string nccl = "/usr/local/cuda/lib64/libnccl.so.2";
  auto lenient = RunProcess({HETRUN_BINARY, "check", "--target-arch", "8.0", nccl}, CleanEnv());
  if (lenient.exit_code == 78) GTEST_SKIP() << nccl << " not installed";
  EXPECT_EQ(lenient.exit_code, 0) << lenient.out << lenient.err;
  auto strict =
      RunProcess({HETRUN_BINARY, "check", "--strict", "--target-arch", "8.0", nccl}, CleanEnv());
  EXPECT_EQ(strict.exit_code, 80) << strict.out;
}

TEST_F(ArchCliTest, BadArchListIsAUsageErrorNamingTheEntry) {
  auto r = RunProcess({HETRUN_BINARY, "check", "--target-arch", "8.0", "--arch-list", "8.0;9.1"},
                      CleanEnv());
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("'9.1'"), std::string::npos) << r.err;
}

TEST_F(ArchCliTest, CheckWithoutTargetsOrGpusIsAConfigError) {
  auto r = RunProcess({HETRUN_BINARY, "check", Fixture("libmulti.so")}, CleanEnv());
  EXPECT_EQ(r.exit_code, 78) << r.out << r.err;
  EXPECT_NE(r.err.find("--target-arch"), std::string::npos) << r.err;
}

TEST_F(ArchCliTest, InspectJsonListsImagesAndReportsBadFiles) {
  testing::TempDir dir;
  const std::string junk = dir.WriteFile("junk.so",
                                         "\x7f"
                                         "ELFgarbage");
  auto r =
      RunProcess({HETRUN_BINARY, "inspect", "--json", Fixture("libzstd.so"), junk}, CleanEnv());
  EXPECT_EQ(r.exit_code, 78) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json.size(), 2u);
  const nlohmann::json& images = json[0]["images"];
  ASSERT_EQ(images.size(), 5u);  // 2 in the device-link stub, 3 in the module
  EXPECT_EQ(images[4]["arch"], "compute_90");
  EXPECT_EQ(images[4]["kind"], "ptx");
  EXPECT_TRUE(images[4]["compressed"].get<bool>());
  EXPECT_NE(json[1]["error"].get<std::string>().find("junk.so"), std::string::npos);
}

TEST_F(ArchCliTest, InspectScansDirectoriesSkippingNonElfQuietly) {
  auto r = RunProcess({HETRUN_BINARY, "inspect", HETRUN_ARCH_FIXTURE_DIR}, CleanEnv());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("librdc.so: 1 kernel module"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("__nv_relfatbin"), std::string::npos);
  EXPECT_EQ(r.out.find("fixtures.stamp"), std::string::npos);
}

}  // namespace
}  // namespace hetrun

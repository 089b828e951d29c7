// The CMake build's launcher refuses a rendezvous plugin whose torch is not installed: a copy of
// bin/hetrun and lib/libhetrun_rendezvous.so with an edited torch record beside it (the record is
// the only thing faked; the check reads the real torch's version.py). Exit 78 before any port is
// bound or any worker runs, naming both versions.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "free_port.h"
#include "run_process.h"

namespace hetrun {
namespace {

using namespace std::chrono_literals;
using testing::ProcessOptions;
using testing::ProcessResult;

const std::string kPlugin = std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.so";
const std::string kRecord = std::string(HETRUN_BUILD_DIR) + "/lib/libhetrun_rendezvous.torch";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value of `key=` in the build's record.
std::string RecordValue(const std::string& key) {
  std::istringstream lines(ReadAll(kRecord));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

// dir/bin/hetrun and dir/lib/libhetrun_rendezvous.so (the launcher looks in $ORIGIN/../lib
// first) with `record` beside the plugin.
std::string CopiedLauncher(const testing::TempDir& dir, const std::string& record) {
  namespace fs = std::filesystem;
  fs::create_directories(fs::path(dir.path()) / "bin");
  fs::create_directories(fs::path(dir.path()) / "lib");
  fs::copy_file(HETRUN_BINARY, fs::path(dir.path()) / "bin/hetrun");
  fs::copy_file(kPlugin, fs::path(dir.path()) / "lib/libhetrun_rendezvous.so");
  dir.WriteFile("lib/libhetrun_rendezvous.torch", record);
  return (fs::path(dir.path()) / "bin/hetrun").string();
}

ProcessResult RunSecondNode(const testing::TempDir& dir, const std::string& hetrun,
                            const std::string& python) {
  ProcessOptions options =
      testing::IsolatedIn(dir, 60s,
                          {{"HETRUN_TERMINATION_LOG", dir.path() + "/termination.log"},
                           {"HETRUN_PYTHON", python},
                           {"HETRUN_FAKE_GPUS", "A100-SXM4-80GB:8.0:81049"}});
  return testing::RunProcess(
      {hetrun, "run", "--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "1", "--master-addr",
       "127.0.0.1", "--master-port", std::to_string(testing::FreePort()), "--", "sh", "-c",
       "echo worker-ran"},
      options);
}

TEST(RendezvousTorchTest, BuildRecordsTheTorchItWasConfiguredWith) {
  if (!std::filesystem::exists(kPlugin)) GTEST_SKIP() << "built without libtorch";
  const std::string dir = RecordValue("torch_dir");
  ASSERT_FALSE(dir.empty()) << ReadAll(kRecord);
  EXPECT_TRUE(std::filesystem::path(dir).is_absolute()) << dir;
  EXPECT_NE(ReadAll(dir + "/version.py").find("__version__ = '" + RecordValue("torch_version")),
            std::string::npos)
      << "the record's version is the one of " << dir << "/version.py";
}

TEST(RendezvousTorchTest, OtherTorchReleaseExits78NamingBothBeforeAnyWorker) {
  if (!std::filesystem::exists(kPlugin)) GTEST_SKIP() << "built without libtorch";
  testing::TempDir dir;
  const std::string installed = RecordValue("torch_version");
  const std::string hetrun =
      CopiedLauncher(dir, "torch_version=2.10.0+cpu\ntorch_dir=" + RecordValue("torch_dir") + "\n");
  ProcessResult r = RunSecondNode(dir, hetrun, "/nonexistent/python");
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("built for torch 2.10.0+cpu, but the installed torch is " + installed),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("worker-ran"), std::string::npos);
  EXPECT_NE(ReadAll(dir.path() + "/termination.log").find("built for torch 2.10.0+cpu"),
            std::string::npos);
}

TEST(RendezvousTorchTest, NoTorchExits78NamingTheVersionItNeeds) {
  if (!std::filesystem::exists(kPlugin)) GTEST_SKIP() << "built without libtorch";
  testing::TempDir dir;
  const std::string hetrun =
      CopiedLauncher(dir, "torch_version=2.11.0+cu130\ntorch_dir=" + dir.path() + "/no-torch\n");
  // The interpreter asked as the fallback has no torch either (it cannot run at all).
  ProcessResult r = RunSecondNode(dir, hetrun, "/nonexistent/python");
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("built for torch 2.11.0+cu130, but no torch is installed"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cannot run /nonexistent/python"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrun

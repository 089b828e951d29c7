// Fail-slow on the C++ path, live (docs/ARCHITECTURE.md §5.4, §5.10): examples/trainer under the
// real `hetrun run` on 3 emulated H100 SXM5 ranks and 1 A100 (3.17x), rank 1 turning 2x slower
// at step 30 through HETRUN_EMULATE_SLOWDOWN's `@stepS` entry, which the C++ StepTimer follows
// step by step as the Python clocks do. `--fail-slow exit` ends the job with 83 naming rank 1 and
// its model; the A100, alone in its model, is never reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "free_port.h"
#include "run_process.h"

namespace hetrun {
namespace {

using testing::FreePort;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

constexpr char kH100[] = "H100-SXM5-80GB:9.0:81090";
constexpr char kA100[] = "A100-SXM4-80GB:8.0:81049";

ProcessResult RunTrainer(const TempDir& dir, const std::string& slowdown) {
  const std::string gpus = std::string(kH100) + "," + kH100 + "," + kH100 + "," + kA100;
  std::vector<std::string> argv = {HETRUN_BINARY,
                                   "run",
                                   "--nproc-per-node",
                                   "4",
                                   "--master-port",
                                   std::to_string(FreePort()),
                                   "--fake-gpus",
                                   gpus,
                                   "--fail-slow",
                                   "exit",
                                   "--",
                                   HETRUN_TRAINER,
                                   "--batch",
                                   "32",
                                   "--steps",
                                   "150",
                                   "--window",
                                   "5",
                                   "--warmup",
                                   "2",
                                   "--seq",
                                   "32"};
  ProcessOptions options;
  options.env = std::map<std::string, std::string>{
      {"PATH", std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"},
      {"HOME", dir.path()},
      {"OMP_NUM_THREADS", "1"},
      {"HETRUN_TERMINATION_LOG", dir.path() + "/termination-log"},
      {"HETRUN_EMULATE_SLOWDOWN", slowdown}};
  options.timeout = std::chrono::seconds(280);
  return RunProcess(argv, options);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FailSlowLiveTest, AnH100TurningTwiceSlowerMidRunEndsTheJobWith83NamingItsModel) {
  TempDir dir;
  ProcessResult r = RunTrainer(dir, "ampere=3.17,hopper=1.0,rank1=2.0@step30");
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 83) << r.out << r.err;
  const std::string log = ReadAll(dir.path() + "/termination-log");
  EXPECT_NE(log.find("rank 1"), std::string::npos) << log << r.err;
  EXPECT_NE(log.find("model h100-sxm5"), std::string::npos) << log << r.err;
  EXPECT_EQ(r.err.find("rank 3 (model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrun

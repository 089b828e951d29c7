// The mistakes a newcomer makes get a clear word and the exit code the table gives them
// (issue 38, item 8; docs/ARCHITECTURE.md §4.1, §4.3): a misspelled HETRUN_* variable is named
// with the closest declared name; a bad value exits 64 from a flag and 78 from the environment;
// a worker script or interpreter that is not there is refused before any worker starts; more
// workers than declared GPUs is an error naming both counts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "run_harness.h"

namespace hetrun {
namespace {

using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::TempDir;

constexpr const char* kTwoGpus = "A100-SXM4-80GB:8.0:81049,H100-SXM5-80GB:9.0:81082";

/// A stand-in interpreter that leaves a marker when it starts: no marker, no worker started.
std::string MarkingPython(const TempDir& dir) {
  const std::string python =
      dir.WriteFile("bin/python-marking", "#!/bin/sh\ntouch \"$(dirname \"$0\")/started\"\n");
  EXPECT_EQ(::chmod(python.c_str(), 0755), 0);
  return python;
}

bool WorkerStarted(const TempDir& dir) {
  return std::filesystem::exists(dir.path() + "/bin/started");
}

TEST(RunMistakesTest, AMisspelledHetrunVariableIsWarnedAboutWithTheClosestName) {
  TempDir dir;
  auto env = HetrunEnv(dir.path());
  env["HETRUN_FAKE_GPU"] = kTwoGpus;
  env["HETRUN_TERMINATION_LOGS"] = dir.path() + "/t";
  env["HETRUN_ZZZZZZZZZZZZZZZZ"] = "1";
  env["HETRUN_LOG_LEVEL"] = "info";  // declared: no word about it
  HetrunProcess run({"version"}, env, dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  const std::string err = run.err();
  EXPECT_NE(err.find("HETRUN_FAKE_GPU is not a hetrun variable (did you mean HETRUN_FAKE_GPUS?)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("HETRUN_TERMINATION_LOGS is not a hetrun variable (did you mean "
                     "HETRUN_TERMINATION_LOG?)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("HETRUN_ZZZZZZZZZZZZZZZZ is not a hetrun variable (hetrun vars lists them)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("HETRUN_LOG_LEVEL"), std::string::npos) << err;
}

struct BadValue {
  std::string flag;
  std::string variable;
  std::string value;
};

TEST(RunMistakesTest, ABadValueExits64FromAFlagAnd78FromTheEnvironment) {
  const std::vector<BadValue> cases = {
      {"--fake-gpus", "HETRUN_FAKE_GPUS", "A100:eight:81049"},
      {"--nnodes", "HETRUN_NNODES", "zero"},
      {"--nproc-per-node", "HETRUN_NPROC_PER_NODE", "many"},
      {"--master-port", "HETRUN_MASTER_PORT", "99999"},
      {"--grace-period", "HETRUN_GRACE_PERIOD", "soon"},
      {"--max-restarts", "HETRUN_MAX_RESTARTS", "three"},
      {"--memory-reserve", "HETRUN_MEMORY_RESERVE", "lots"},
      {"--cpu-bind", "HETRUN_CPU_BIND", "everywhere"},
  };
  for (const BadValue& bad : cases) {
    SCOPED_TRACE(bad.flag + " / " + bad.variable + " = " + bad.value);
    TempDir dir;
    const std::string python = MarkingPython(dir);
    const std::string script = dir.WriteFile("train.py", "");
    HetrunProcess flag({"run", "--python", python, bad.flag, bad.value, script},
                       HetrunEnv(dir.path()), dir.path(), "flag");
    EXPECT_EQ(flag.Wait(), 64) << flag.err();
    EXPECT_NE(flag.err().find(bad.flag), std::string::npos) << flag.err();
    auto env = HetrunEnv(dir.path());
    env[bad.variable] = bad.value;
    HetrunProcess variable({"run", "--python", python, script}, env, dir.path(), "variable");
    EXPECT_EQ(variable.Wait(), 78) << variable.err();
    EXPECT_NE(variable.err().find(bad.variable + "="), std::string::npos) << variable.err();
    EXPECT_FALSE(WorkerStarted(dir));
  }
}

TEST(RunMistakesTest, AWorkerScriptThatDoesNotExistIsRefusedBeforeAnyWorkerStarts) {
  TempDir dir;
  const std::string python = MarkingPython(dir);
  const std::string missing = dir.path() + "/trian.py";
  // torchrun's form, and hetrun's own `-- PYTHON script.py`.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--nproc-per-node", "2", "--python", python, missing},
        std::vector<std::string>{"run", "--nproc-per-node", "2", "--", python, missing}}) {
    HetrunProcess run(args, HetrunEnv(dir.path()), dir.path());
    EXPECT_EQ(run.Wait(), 127) << run.err();
    EXPECT_NE(run.err().find("the worker script '" + missing + "' does not exist"),
              std::string::npos)
        << run.err();
    EXPECT_NE(testing::ReadFile(dir.path() + "/termination-log").find("trian.py"),
              std::string::npos);
    EXPECT_FALSE(WorkerStarted(dir));
  }
  // A dry run previews a pod's command line, whose paths may not exist here: a warning only.
  HetrunProcess dry({"run", "--dry-run", "--python", python, missing}, HetrunEnv(dir.path()),
                    dir.path(), "dry");
  EXPECT_EQ(dry.Wait(), 0) << dry.err();
  EXPECT_NE(dry.err().find("a run here would exit 127: the worker script"), std::string::npos)
      << dry.err();
  // The same command with the script in place starts the workers.
  dir.WriteFile("trian.py", "");
  HetrunProcess run({"run", "--nproc-per-node", "1", "--python", python, missing},
                    HetrunEnv(dir.path()), dir.path());
  EXPECT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(WorkerStarted(dir));
}

TEST(RunMistakesTest, APythonThatIsNotFoundNamesThePythonFlagAndVariable) {
  TempDir dir;
  const std::string script = dir.WriteFile("train.py", "");
  auto env = HetrunEnv(dir.path());
  env["HETRUN_PYTHON"] = "hetrun-no-such-python";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--python", "hetrun-no-such-python", script},
        std::vector<std::string>{"run", script}}) {
    HetrunProcess run(args, env, dir.path());
    EXPECT_EQ(run.Wait(), 127) << run.err();
    for (const char* part : {"'hetrun-no-such-python' not found", "--python", "HETRUN_PYTHON"}) {
      EXPECT_NE(run.err().find(part), std::string::npos) << part << "\n" << run.err();
    }
  }
}

TEST(RunMistakesTest, MoreWorkersThanDeclaredGpusExits64FromFlagsAnd78FromTheEnvironment) {
  TempDir dir;
  const std::string python = MarkingPython(dir);
  const std::string script = dir.WriteFile("train.py", "");
  HetrunProcess flags(
      {"run", "--python", python, "--nproc-per-node", "3", "--fake-gpus", kTwoGpus, script},
      HetrunEnv(dir.path()), dir.path(), "flags");
  EXPECT_EQ(flags.Wait(), 64) << flags.err();
  EXPECT_NE(flags.err().find("3 local workers"), std::string::npos) << flags.err();
  EXPECT_NE(flags.err().find("2 declared GPU(s)"), std::string::npos) << flags.err();
  auto env = HetrunEnv(dir.path());
  env["HETRUN_NPROC_PER_NODE"] = "3";
  env["HETRUN_FAKE_GPUS"] = kTwoGpus;
  HetrunProcess variables({"run", "--python", python, script}, env, dir.path(), "variables");
  EXPECT_EQ(variables.Wait(), 78) << variables.err();
  EXPECT_NE(variables.err().find("HETRUN_FAKE_GPUS"), std::string::npos) << variables.err();
  EXPECT_FALSE(WorkerStarted(dir));
  // As many workers as GPUs run.
  env["HETRUN_NPROC_PER_NODE"] = "2";
  HetrunProcess fits({"run", "--python", python, script}, env, dir.path(), "fits");
  EXPECT_EQ(fits.Wait(), 0) << fits.err();
  EXPECT_TRUE(WorkerStarted(dir));
}

}  // namespace
}  // namespace hetrun

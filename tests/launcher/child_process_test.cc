#include "child_process.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "run_process.h"

namespace hetrun::launcher {
namespace {

TEST(ChildProcessTest, ResolvesCommandsLikeExecvp) {
  testing::TempDir dir;
  std::string tool = dir.WriteFile("bin/tool", "#!/bin/sh\n");
  ::chmod(tool.c_str(), 0755);
  dir.WriteFile("plain/data", "x");
  EXPECT_EQ(ResolveCommand("tool", "/nonexistent:" + dir.path() + "/bin").value(), tool);
  EXPECT_EQ(ResolveCommand("./relative", "").value(), "./relative");
  EXPECT_EQ(ResolveCommand("missing", dir.path() + "/bin").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ResolveCommand("data", dir.path() + "/plain").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(ChildProcessTest, ChildLeadsItsOwnProcessGroupWithTheGivenEnvironment) {
  SpawnSpec spec{
      {"/bin/sh", "-c", "test \"$(ps -o pgid= $$ | tr -d ' ')\" = $$ && test \"$X\" = y"},
      {{"X", "y"}, {"PATH", "/usr/bin:/bin"}}};
  Result<pid_t> pid = SpawnProcess(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(ChildProcessTest, ExecFailuresMapTo126And127) {
  testing::TempDir dir;
  std::string data = dir.WriteFile("data", "x");
  Result<pid_t> missing = SpawnProcess({{dir.path() + "/nothing"}, {}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(ExitCodeForSpawnError(missing.status()), 127) << missing.status().ToString();
  Result<pid_t> not_executable = SpawnProcess({{data}, {}});
  ASSERT_FALSE(not_executable.ok());
  EXPECT_EQ(ExitCodeForSpawnError(not_executable.status()), 126);
}

}  // namespace
}  // namespace hetrun::launcher

#include "supervise/child_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "run_process.h"
#include "supervise/cpu_binding.h"

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

TEST(ChildProcessTest, ChildRunsOnTheGivenCpus) {
  Result<std::vector<int>> allowed = AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  const int last = allowed->back();
  testing::TempDir dir;
  std::string out_path = dir.path() + "/out";
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(out, 0);
  SpawnSpec spec{{"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"},
                 {{"PATH", "/usr/bin:/bin"}},
                 out};
  spec.cpus = {last};
  Result<pid_t> pid = SpawnProcess(spec);
  ::close(out);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "Cpus_allowed_list:\t" + std::to_string(last) + "\n");
}

TEST(ChildProcessTest, CpusTheChildMayNotUseAreAnInternalErrorNamingTheCall) {
  Result<std::vector<int>> allowed = AllowedCpus();
  ASSERT_TRUE(allowed.ok());
  int outside = -1;  // a CPU number outside this process's mask, when there is one
  for (int cpu = 0; cpu < CPU_SETSIZE && outside < 0; ++cpu) {
    if (std::find(allowed->begin(), allowed->end(), cpu) == allowed->end()) outside = cpu;
  }
  ASSERT_GE(outside, 0);
  SpawnSpec spec{{"/bin/true"}, {}};
  spec.cpus = {outside};
  Result<pid_t> pid = SpawnProcess(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(ExitCodeForSpawnError(pid.status()), 70) << pid.status().ToString();
  EXPECT_NE(pid.status().message().find("sched_setaffinity"), std::string::npos);

  spec.cpus = {CPU_SETSIZE};
  Result<pid_t> too_large = SpawnProcess(spec);
  ASSERT_FALSE(too_large.ok());
  EXPECT_EQ(too_large.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hetrun::launcher

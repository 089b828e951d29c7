// The interpreter rule: the wheel's launcher uses the python beside it, a CMake build python3.
#include "preflight/default_python.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "run_process.h"

namespace hetrun::launcher {
namespace {

TEST(DefaultPythonTest, WheelLauncherUsesThePythonOfItsEnvironment) {
  testing::TempDir dir;
  const std::string python = dir.WriteFile("venv/bin/python", "#!/bin/sh\n");
  ASSERT_EQ(::chmod(python.c_str(), 0755), 0);
  const std::filesystem::path launcher = std::filesystem::path(dir.path()) / "venv/bin/hetrun";
  EXPECT_EQ(DefaultPythonFor(launcher, /*wheel_launcher=*/true), python);
  EXPECT_EQ(DefaultPythonFor(launcher, /*wheel_launcher=*/false), "python3");
}

TEST(DefaultPythonTest, WheelLauncherWithoutAnExecutablePythonBesideFallsBackToPython3) {
  testing::TempDir dir;
  const std::filesystem::path launcher = std::filesystem::path(dir.path()) / "bin/hetrun";
  EXPECT_EQ(DefaultPythonFor(launcher, true), "python3");
  const std::string python = dir.WriteFile("bin/python", "not executable");
  ASSERT_EQ(::chmod(python.c_str(), 0644), 0);
  EXPECT_EQ(DefaultPythonFor(launcher, true), "python3");
}

TEST(DefaultPythonTest, CMakeBuiltLauncherKeepsPython3AndGivenValuesWin) {
  EXPECT_FALSE(IsWheelLauncher());  // the tests link the CMake build's launcher
  EXPECT_EQ(DefaultPython(), "python3");
  EXPECT_EQ(PythonOrDefault(std::string("/opt/py/bin/python")), "/opt/py/bin/python");
  EXPECT_EQ(PythonOrDefault(std::nullopt), "python3");
}

}  // namespace
}  // namespace hetrun::launcher

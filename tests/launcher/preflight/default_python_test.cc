// The interpreter rule: the wheel's launcher uses the python beside it, the launcher in its build
// tree the Python the build was configured with, any other copy python3.
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

TEST(DefaultPythonTest, BuildTreeLauncherUsesThePythonTheBuildWasConfiguredWith) {
  testing::TempDir dir;
  const std::string python = dir.WriteFile("clone/.venv/bin/python", "#!/bin/sh\n");
  ASSERT_EQ(::chmod(python.c_str(), 0755), 0);
  const std::string hetrun = dir.WriteFile("clone/build/bin/hetrun", "");
  const std::filesystem::path bin = std::filesystem::path(hetrun).parent_path();
  const BuildTree build{bin, python};
  EXPECT_EQ(DefaultPythonFor(hetrun, false, build), python);
  // Through another spelling of the same folder too.
  EXPECT_EQ(DefaultPythonFor(bin / ".." / "bin" / "hetrun", false, build), python);
  // A copy elsewhere (make install, an image) keeps python3 from PATH.
  const std::string installed = dir.WriteFile("prefix/bin/hetrun", "");
  EXPECT_EQ(DefaultPythonFor(installed, false, build), "python3");
  // A configured Python that is gone or not executable: python3 again.
  ASSERT_EQ(::chmod(python.c_str(), 0644), 0);
  EXPECT_EQ(DefaultPythonFor(hetrun, false, build), "python3");
  EXPECT_EQ(DefaultPythonFor(hetrun, false, {bin, dir.path() + "/none/python"}), "python3");
}

TEST(DefaultPythonTest, ThisBuildsTreeNamesItsBinFolderAndPython) {
  EXPECT_FALSE(IsWheelLauncher());  // the tests link the CMake build's launcher
  const BuildTree build = ThisBuildTree();
  EXPECT_EQ(build.bin_dir.filename(), "bin");
  EXPECT_FALSE(build.python.empty());
}

TEST(DefaultPythonTest, ACopyOutsideTheBuildsBinFolderKeepsPython3AndGivenValuesWin) {
  EXPECT_FALSE(IsWheelLauncher());  // the tests link the CMake build's launcher
  EXPECT_EQ(DefaultPython(), "python3");
  EXPECT_EQ(PythonOrDefault(std::string("/opt/py/bin/python")), "/opt/py/bin/python");
  EXPECT_EQ(PythonOrDefault(std::nullopt), "python3");
}

}  // namespace
}  // namespace hetrun::launcher

// docker/: the points of the image a reviewer checks by reading (no Docker engine here): no CMD
// (a pod without arguments exits 64), runtime libraries from packages, the Python package
// installed, and a .dockerignore that keeps the virtualenv, build trees and .git out.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "run_process.h"

namespace hetrun {
namespace {

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(HETRUN_SOURCE_DIR) + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DockerFilesTest, ImageHasNoCmdAndTakesLibrariesFromPackages) {
  std::string dockerfile = ReadSource("docker/Dockerfile");
  ASSERT_FALSE(dockerfile.empty());
  EXPECT_EQ(dockerfile.find("\nCMD "), std::string::npos) << "no CMD";
  EXPECT_NE(dockerfile.find("ENTRYPOINT [\"/opt/hetrun/bin/hetrun\"]"), std::string::npos);
  EXPECT_EQ(dockerfile.find("| awk"), std::string::npos) << "no libraries copied from ldd";
  EXPECT_NE(dockerfile.find("libspdlog1.12"), std::string::npos);
  EXPECT_NE(dockerfile.find("libfmt9"), std::string::npos);
  EXPECT_NE(dockerfile.find("pip install --no-cache-dir /src/hetrun"), std::string::npos);
}

TEST(DockerFilesTest, HetrunWithoutArgumentsExits64AsThePodWould) {
  testing::ProcessResult r = testing::RunProcess({HETRUN_BINARY});
  EXPECT_EQ(r.exit_code, 64) << r.err;
}

TEST(DockerFilesTest, DockerignoreKeepsTheVenvBuildTreesAndGitOut) {
  std::string ignore = ReadSource(".dockerignore");
  for (const char* entry : {"\n.git\n", "\n.venv\n", "\nbuild\n", "\nbuild-*\n", "\n.gpu-deps\n"}) {
    EXPECT_NE(("\n" + ignore).find(entry), std::string::npos) << entry;
  }
}

}  // namespace
}  // namespace hetrun

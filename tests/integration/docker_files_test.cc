// docker/: the points of the image a reviewer checks by reading (the image itself is built and
// tested by the container.image* tests): no CMD (a pod without arguments exits 64), bases as
// build arguments, no distribution-specific library in the runtime stage, the CUDA check, the
// Python package installed, and a .dockerignore that keeps the virtualenv, wheels, build trees
// and .git out.
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

TEST(DockerFilesTest, ImageHasNoCmdAndItsEntrypointIsHetrunInExecForm) {
  std::string dockerfile = ReadSource("docker/Dockerfile");
  ASSERT_FALSE(dockerfile.empty());
  EXPECT_EQ(dockerfile.find("\nCMD "), std::string::npos) << "no CMD";
  EXPECT_NE(dockerfile.find("ENTRYPOINT [\"/opt/hetrun/bin/hetrun\"]"), std::string::npos);
  EXPECT_NE(dockerfile.find("pip install --quiet --no-cache-dir /src/hetrun"), std::string::npos);
}

// Issue 37 item 2: the bases are build arguments (nvidia/cuda by default, the local Debian base
// here), and the runtime stage installs no distribution-specific library package (hetrun links
// spdlog, fmt, zstd and lz4 in: HETRUN_STATIC_DEPS).
TEST(DockerFilesTest, BasesAreBuildArgumentsAndTheRuntimeStageNamesNoDistributionLibrary) {
  std::string dockerfile = ReadSource("docker/Dockerfile");
  EXPECT_NE(dockerfile.find("ARG BUILD_BASE=nvidia/cuda:${CUDA_VERSION}-devel-"),
            std::string::npos);
  EXPECT_NE(dockerfile.find("ARG RUNTIME_BASE=nvidia/cuda:${CUDA_VERSION}-runtime-"),
            std::string::npos);
  EXPECT_NE(dockerfile.find("FROM ${BUILD_BASE} AS build"), std::string::npos);
  EXPECT_NE(dockerfile.find("FROM ${RUNTIME_BASE} AS runtime"), std::string::npos);
  EXPECT_NE(dockerfile.find("-DHETRUN_STATIC_DEPS=ON"), std::string::npos);
  size_t runtime = dockerfile.find("AS runtime");
  ASSERT_NE(runtime, std::string::npos);
  std::string stage = dockerfile.substr(runtime);
  for (const char* name : {"libspdlog", "libfmt", "libzstd", "liblz4", "libssl", "libyaml"}) {
    EXPECT_EQ(stage.find(name), std::string::npos) << name << " in the runtime stage";
  }
  EXPECT_NE(stage.find("runtime-libs.sh /opt/hetrun"), std::string::npos);
}

// Issue 37 item 2: torch 2.11.0 from PyPI is the CUDA 13.0 build; the default base is CUDA 13.0
// and the build runs the check that refuses a mismatch.
TEST(DockerFilesTest, TheDefaultCudaIsTorchsAndAMismatchIsRefused) {
  std::string dockerfile = ReadSource("docker/Dockerfile");
  EXPECT_NE(dockerfile.find("ARG CUDA_VERSION=13.0."), std::string::npos);
  EXPECT_NE(dockerfile.find("ARG TORCH_VERSION=2.11.0"), std::string::npos);
  EXPECT_NE(dockerfile.find("cuda-match.sh \"${CUDA_VERSION}\" /opt/cuda/bin/nvcc"),
            std::string::npos);
}

TEST(DockerFilesTest, HetrunWithoutArgumentsExits64AsThePodWould) {
  testing::ProcessResult r = testing::RunProcess({HETRUN_BINARY});
  EXPECT_EQ(r.exit_code, 64) << r.err;
}

TEST(DockerFilesTest, DockerignoreKeepsTheVenvBuildTreesAndGitOut) {
  std::string ignore = ReadSource(".dockerignore");
  for (const char* entry :
       {"\n.git\n", "\n.venv\n", "\nbuild\n", "\nbuild-*\n", "\n.gpu-deps\n", "\n.wheelhouse\n"}) {
    EXPECT_NE(("\n" + ignore).find(entry), std::string::npos) << entry;
  }
}

}  // namespace
}  // namespace hetrun

#include "preflight/gpu_probe.h"

#include <gtest/gtest.h>

namespace hetrun::launcher {
namespace {

TEST(GpuProbeTest, ParsesProbeLinesIntoInventory) {
  auto gpus = ParseProbeOutput(
      "gpu 0 9 0 900 150000000000 150754820096 NVIDIA H200\n"
      "err 1 arch mismatch: no kernel image\n");
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].info.name, "NVIDIA H200");
  EXPECT_EQ((*gpus)[0].info.family, "hopper");
  EXPECT_EQ((*gpus)[0].kernel_arch, 900);
  EXPECT_EQ((*gpus)[0].info.usable_bytes, 150000000000u);
  EXPECT_EQ((*gpus)[1].error, "arch mismatch: no kernel image");
}

TEST(GpuProbeTest, MalformedOutputIsAnError) {
  EXPECT_FALSE(ParseProbeOutput("garbage here\n").ok());
}

TEST(GpuProbeTest, ProbeInChildSucceedsWithoutAGpu) {
  // On machines without a GPU (CI) the probe finds nothing and is not an error; on a GPU machine
  // every listed GPU must have run the probe kernel.
  auto gpus = ProbeGpusInChild();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  for (const ProbedGpu& gpu : *gpus) {
    EXPECT_TRUE(gpu.error.empty()) << gpu.error;
    EXPECT_GT(gpu.kernel_arch, 0);
  }
}

}  // namespace
}  // namespace hetrun::launcher

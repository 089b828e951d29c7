// The GPU model as identity (hetrun/job/gpu_model.h): NVML's and CUDA's product names, declared
// names and PCI device ids map to one normalised model name each.
#include "hetrun/job/gpu_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "hetrun/job/inventory.h"

namespace hetrun {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(GpuModelTest, NvmlProductNamesOfOneFamilyAreDifferentModels) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3", 80 * kGiB), "h100-sxm5");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 PCIe", 80 * kGiB), "h100-pcie");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H200", 140 * kGiB), "h200");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H20", 96 * kGiB), "h20");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-80GB"), "a100-sxm4-80gb");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-40GB"), "a100-sxm4-40gb");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-PCIE-40GB"), "a100-pcie-40gb");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100 80GB PCIe"), "a100-pcie-80gb");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A10"), "a10");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A40"), "a40");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L40S"), "l40s");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L4"), "l4");
}

TEST(GpuModelTest, MemoryTellsA100FortyFromEightyWhenTheNameDoesNot) {
  EXPECT_EQ(NormalizeGpuModel("A100", 81049ull << 20), "a100-sxm4-80gb");
  EXPECT_EQ(NormalizeGpuModel("A100", 40339ull << 20), "a100-sxm4-40gb");
  EXPECT_EQ(NormalizeGpuModel("A100 PCIe", 81049ull << 20), "a100-pcie-80gb");
}

TEST(GpuModelTest, UnknownNamesKeepAShortSlugAndAnEmptyNameIsUnknown) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A10G"), "a10g");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 NVL"), "h100-nvl");
  EXPECT_EQ(NormalizeGpuModel("Tesla V100-SXM2-32GB"), "v100-sxm2-32gb");
  EXPECT_LE(NormalizeGpuModel("NVIDIA RTX PRO 6000 Blackwell Server Edition").size(), 15u);
  EXPECT_EQ(NormalizeGpuModel(""), "");
  EXPECT_EQ(NormalizeGpuModel("h100-sxm5"), "h100-sxm5");  // a table id is its own model
}

TEST(GpuModelTest, PciDeviceIdsNameTheModelWhenTheNameCannot) {
  ASSERT_NE(GpuModelForPciDevice(0x2330), nullptr);
  EXPECT_EQ(GpuModelForPciDevice(0x2330)->id, "h100-sxm5");
  // NVML's pciDeviceId: device << 16 | vendor (0x10de).
  ASSERT_NE(GpuModelForPciDevice(0x233110de), nullptr);
  EXPECT_EQ(GpuModelForPciDevice(0x233110de)->id, "h100-pcie");
  EXPECT_EQ(GpuModelForPciDevice(0x1234), nullptr);
}

TEST(GpuModelTest, EveryTableEntryHasAFamilyASpeedASourceAndAShortUniqueId) {
  std::set<std::string_view> ids;
  std::set<uint32_t> pci;
  for (const GpuModelSpec& m : KnownGpuModels()) {
    EXPECT_TRUE(ids.insert(m.id).second) << m.id;
    EXPECT_TRUE(pci.insert(m.pci_device_id).second) << m.id;
    EXPECT_LE(m.id.size(), 15u) << m.id;
    EXPECT_EQ(m.family, FamilyForCapability(m.major, m.minor)) << m.id;
    EXPECT_GT(m.bf16_dense_tflops, 0) << m.id;
    EXPECT_FALSE(m.source.empty()) << m.id;
    EXPECT_EQ(NormalizeGpuModel(m.id), m.id);
  }
  EXPECT_EQ(ids.size(), 12u);
}

// docs/reference/gpu-models.md's table holds one row per model with its family, capability, PCI
// id and TFLOP/s as the code has them.
TEST(GpuModelTest, TheDocsTableMatchesTheCodesTable) {
  std::ifstream in(HETRUN_SOURCE_DIR "/docs/reference/gpu-models.md");
  ASSERT_TRUE(in) << "docs/reference/gpu-models.md";
  std::stringstream text;
  text << in.rdbuf();
  for (const GpuModelSpec& m : KnownGpuModels()) {
    char row[160];
    std::snprintf(row, sizeof(row), "| %s | %s | %d.%d | 0x%04x | ", std::string(m.id).c_str(),
                  std::string(m.family).c_str(), m.major, m.minor, m.pci_device_id);
    const size_t at = text.str().find(row);
    ASSERT_NE(at, std::string::npos) << row;
    const std::string line = text.str().substr(at, text.str().find('\n', at) - at);
    char tflops[32];
    std::snprintf(tflops, sizeof(tflops), "| %g |", m.bf16_dense_tflops);
    EXPECT_NE(line.find(tflops), std::string::npos) << line << " lacks " << tflops;
  }
}

TEST(GpuModelTest, DeclaredGpusCarryTheirModelBesideTheirFamily) {
  Result<std::vector<GpuInfo>> gpus =
      ParseFakeGpus("H100-SXM5-80GB:9.0:81090,H100-PCIe:9.0:81090,A100:8.0:40339");
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_EQ((*gpus)[0].family, "hopper");
  EXPECT_EQ((*gpus)[0].model, "h100-sxm5");
  EXPECT_EQ((*gpus)[1].family, "hopper");
  EXPECT_EQ((*gpus)[1].model, "h100-pcie");
  EXPECT_EQ((*gpus)[2].model, "a100-sxm4-40gb");
}

}  // namespace
}  // namespace hetrun

#include "hetrun/job/inventory.h"

#include <gtest/gtest.h>

namespace hetrun {
namespace {

class ListProbe : public GpuProbe {
 public:
  explicit ListProbe(std::vector<GpuInfo> gpus) : gpus_(std::move(gpus)) {}
  Result<std::vector<GpuInfo>> Probe() override { return gpus_; }

 private:
  std::vector<GpuInfo> gpus_;
};

TEST(InventoryTest, ParsesTheArchitectureExample) {
  auto gpus = ParseFakeGpus("A100-SXM4-80GB:8.0:81049,H100-SXM5-80GB:9.0:81090");
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].name, "A100-SXM4-80GB");
  EXPECT_EQ((*gpus)[0].family, "ampere");
  EXPECT_EQ((*gpus)[0].usable_bytes, 81049ull << 20);
  EXPECT_EQ((*gpus)[1].CapabilityString(), "9.0");
  EXPECT_EQ((*gpus)[1].family, "hopper");
  EXPECT_EQ(FormatFakeGpus(*gpus), "A100-SXM4-80GB:8.0:81049,H100-SXM5-80GB:9.0:81090");
}

TEST(InventoryTest, FamiliesFollowComputeCapability) {
  EXPECT_EQ(FamilyForCapability(8, 0), "ampere");
  EXPECT_EQ(FamilyForCapability(8, 6), "ampere");
  EXPECT_EQ(FamilyForCapability(8, 9), "ada");
  EXPECT_EQ(FamilyForCapability(9, 0), "hopper");
  EXPECT_EQ(FamilyForCapability(10, 0), "blackwell");
  EXPECT_EQ(FamilyForCapability(12, 0), "blackwell");
  EXPECT_EQ(FamilyForCapability(7, 5), "turing");
}

TEST(InventoryTest, BadEntriesAreNamed) {
  for (const char* bad : {"", "A100:8.0", "A100:8:81049", "A100:x.0:1", ":8.0:1", "A100:8.0:0",
                          "A100:8.0:-5", "A100:8.0:81049,", "A100:8.0:1:extra"}) {
    auto gpus = ParseFakeGpus(bad);
    EXPECT_FALSE(gpus.ok()) << bad;
    EXPECT_EQ(gpus.status().code(), StatusCode::kInvalidArgument);
  }
  auto second = ParseFakeGpus("A100:8.0:81049,H100:nine:81090");
  EXPECT_NE(second.status().message().find("GPU 1 'H100:nine:81090'"), std::string::npos)
      << second.status().message();
}

TEST(InventoryTest, FlagBeatsEnvironmentBeatsProbe) {
  ListProbe probe({GpuInfo{"real", 9, 0, 1, 1, "hopper", "real"}});
  Environment env({{"HETRUN_FAKE_GPUS", "A100:8.0:81049"}});
  auto from_flag = LocalInventory(env, "H200:9.0:143000", &probe);
  ASSERT_TRUE(from_flag.ok());
  EXPECT_EQ(from_flag->gpus[0].name, "H200");
  EXPECT_EQ(from_flag->source_detail, "--fake-gpus");
  auto from_env = LocalInventory(env, "", &probe);
  EXPECT_EQ(from_env->gpus[0].name, "A100");
  auto probed = LocalInventory(Environment(), "", &probe);
  EXPECT_EQ(probed->gpus[0].name, "real");
  EXPECT_EQ(probed->source, InventorySource::kProbe);
  auto none = LocalInventory(Environment(), "", nullptr);
  EXPECT_TRUE(none->gpus.empty());
}

TEST(InventoryTest, BadEnvironmentInventoryIsAConfigurationErrorNamingTheVariable) {
  auto bad = LocalInventory(Environment({{"HETRUN_FAKE_GPUS", "nonsense"}}), "", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);  // exit 78
  EXPECT_NE(bad.status().message().find("HETRUN_FAKE_GPUS='nonsense' (environment)"),
            std::string::npos)
      << bad.status().message();
}

TEST(InventoryTest, BadFlagInventoryIsAUsageErrorNamingTheFlag) {
  auto bad = LocalInventory(Environment(), "nonsense", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);  // exit 64
  EXPECT_NE(bad.status().message().find("--fake-gpus 'nonsense'"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace hetrun

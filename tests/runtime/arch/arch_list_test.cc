#include "hetrun/arch/arch_list.h"

#include <gtest/gtest.h>

namespace hetrun::arch {
namespace {

std::vector<std::string> Entries(const ArchList& list) {
  std::vector<std::string> out;
  for (const ArchListEntry& e : list.entries) out.push_back(e.ToString());
  return out;
}

TEST(ArchListTest, AcceptsSemicolonsAndSpaces) {
  Result<ArchList> list = ParseTorchCudaArchList("8.0;9.0 8.6  ;");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Entries(*list), (std::vector<std::string>{"8.0", "9.0", "8.6"}));
}

TEST(ArchListTest, ParsesPtxAndArchSpecificEntries) {
  Result<ArchList> list = ParseTorchCudaArchList("8.0;9.0a;9.0+PTX");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Entries(*list), (std::vector<std::string>{"8.0", "9.0a", "9.0+PTX"}));
  EXPECT_TRUE(list->entries[1].arch_specific);
  EXPECT_TRUE(list->entries[2].ptx);
}

TEST(ArchListTest, ExpandsNamedArchitectures) {
  Result<ArchList> list = ParseTorchCudaArchList("Ampere;Hopper");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Entries(*list), (std::vector<std::string>{"8.0", "8.6+PTX", "9.0+PTX"}));
  Result<ArchList> tegra = ParseTorchCudaArchList("Ampere+Tegra");
  ASSERT_TRUE(tegra.ok());
  EXPECT_EQ(Entries(*tegra), (std::vector<std::string>{"8.7"}));
}

TEST(ArchListTest, MergesDuplicates) {
  Result<ArchList> list = ParseTorchCudaArchList("9.0;9.0+PTX;9.0");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(Entries(*list), (std::vector<std::string>{"9.0+PTX"}));
}

TEST(ArchListTest, RejectsUnknownEntryByName) {
  for (const char* bad : {"8.0;9.1", "sm_80", "9.0f", "8.0+ptx", "Hoppper", "8", "9.0aa"}) {
    Result<ArchList> list = ParseTorchCudaArchList(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(list.status().message().find("unknown CUDA arch"), std::string::npos)
        << list.status().message();
  }
  Result<ArchList> list = ParseTorchCudaArchList("8.0;7.7");
  EXPECT_NE(list.status().message().find("'7.7'"), std::string::npos) << list.status().message();
}

TEST(ArchListTest, RejectsEmptyList) {
  EXPECT_FALSE(ParseTorchCudaArchList("").ok());
  EXPECT_FALSE(ParseTorchCudaArchList(" ; ").ok());
}

TEST(ArchListTest, ReportsHowEachTargetIsCovered) {
  Result<ArchList> list = ParseTorchCudaArchList("8.0;9.0+PTX");
  ASSERT_TRUE(list.ok());
  ArchListCoverage a100 = CoverageOf(*list, {8, 0});
  EXPECT_EQ(a100.fit, ImageFit::kSass);
  EXPECT_EQ(a100.via, "8.0");
  EXPECT_EQ(CoverageOf(*list, {8, 6}).fit, ImageFit::kSass);
  EXPECT_EQ(CoverageOf(*list, {9, 0}).fit, ImageFit::kSass);
  ArchListCoverage b200 = CoverageOf(*list, {10, 0});
  EXPECT_EQ(b200.fit, ImageFit::kPtxJit);
  EXPECT_EQ(b200.via, "9.0+PTX");
  EXPECT_EQ(CoverageOf(*list, {7, 5}).fit, ImageFit::kNone);
}

TEST(ArchListTest, SeedCrashListDoesNotCoverA100) {
  Result<ArchList> list = ParseTorchCudaArchList("9.0");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(CoverageOf(*list, {8, 0}).fit, ImageFit::kNone);
  Result<ArchList> hopper_only = ParseTorchCudaArchList("9.0a+PTX");
  ASSERT_TRUE(hopper_only.ok());
  EXPECT_EQ(CoverageOf(*hopper_only, {9, 0}).fit, ImageFit::kSass);
  EXPECT_EQ(CoverageOf(*hopper_only, {10, 0}).fit, ImageFit::kNone);
}

}  // namespace
}  // namespace hetrun::arch

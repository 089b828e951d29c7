#include "hetrun/arch/compat.h"

#include <gtest/gtest.h>

namespace hetrun::arch {
namespace {

FatbinEntry Image(ImageKind kind, uint32_t sm, bool a = false, bool f = false) {
  FatbinEntry entry;
  entry.kind = kind;
  entry.sm = sm;
  entry.arch_specific = a;
  entry.family = f;
  return entry;
}

constexpr ComputeCapability k70{7, 0}, k80{8, 0}, k86{8, 6}, k89{8, 9}, k90{9, 0}, k100{10, 0},
    k103{10, 3}, k120{12, 0};

TEST(CompatTest, SassRunsOnSameMajorWithMinorAtLeast) {
  const FatbinEntry sm80 = Image(ImageKind::kSass, 80);
  EXPECT_EQ(FitOf(sm80, k80), ImageFit::kSass);
  EXPECT_EQ(FitOf(sm80, k86), ImageFit::kSass);
  EXPECT_EQ(FitOf(sm80, k89), ImageFit::kSass);
  EXPECT_EQ(FitOf(sm80, k90), ImageFit::kNone);
  EXPECT_EQ(FitOf(sm80, k70), ImageFit::kNone);
  EXPECT_EQ(FitOf(Image(ImageKind::kSass, 86), k80), ImageFit::kNone);
  EXPECT_EQ(FitOf(Image(ImageKind::kSass, 90), k80), ImageFit::kNone);
}

TEST(CompatTest, ArchSpecificRunsOnExactlyItsCapability) {
  EXPECT_EQ(FitOf(Image(ImageKind::kSass, 90, true), k90), ImageFit::kSass);
  EXPECT_EQ(FitOf(Image(ImageKind::kSass, 100, true), k103), ImageFit::kNone);
  EXPECT_EQ(FitOf(Image(ImageKind::kPtx, 90, true), k90), ImageFit::kPtxJit);
  EXPECT_EQ(FitOf(Image(ImageKind::kPtx, 90, true), k100), ImageFit::kNone);
}

TEST(CompatTest, FamilyRunsOnSameMajorWithMinorAtLeast) {
  const FatbinEntry sm100f = Image(ImageKind::kSass, 100, false, true);
  EXPECT_EQ(FitOf(sm100f, k100), ImageFit::kSass);
  EXPECT_EQ(FitOf(sm100f, k103), ImageFit::kSass);
  EXPECT_EQ(FitOf(sm100f, k120), ImageFit::kNone);
  EXPECT_EQ(FitOf(sm100f, k90), ImageFit::kNone);
  EXPECT_EQ(FitOf(Image(ImageKind::kPtx, 100, false, true), k120), ImageFit::kNone);
}

TEST(CompatTest, PtxJitCompilesOnAnyNewerCapability) {
  const FatbinEntry ptx80 = Image(ImageKind::kPtx, 80);
  EXPECT_EQ(FitOf(ptx80, k80), ImageFit::kPtxJit);
  EXPECT_EQ(FitOf(ptx80, k90), ImageFit::kPtxJit);
  EXPECT_EQ(FitOf(ptx80, k120), ImageFit::kPtxJit);
  EXPECT_EQ(FitOf(ptx80, k70), ImageFit::kNone);
  EXPECT_EQ(FitOf(Image(ImageKind::kPtx, 90), k89), ImageFit::kNone);
}

TEST(CompatTest, LtoIrNeverRunsDirectly) {
  EXPECT_EQ(FitOf(Image(ImageKind::kLtoIr, 90), k90), ImageFit::kNone);
}

TEST(CompatTest, ContainerPrefersSassOverPtx) {
  FatbinContainer container;
  container.entries = {Image(ImageKind::kPtx, 80), Image(ImageKind::kSass, 90)};
  EXPECT_EQ(FitOf(container, k90), ImageFit::kSass);
  EXPECT_EQ(FitOf(container, k80), ImageFit::kPtxJit);
  EXPECT_EQ(FitOf(container, k70), ImageFit::kNone);
}

FatbinContainer Module(std::vector<FatbinEntry> entries, bool stub = false) {
  FatbinContainer container;
  container.entries = std::move(entries);
  container.device_link_stub = stub;
  return container;
}

TEST(CompatTest, FileVerdictsCountModulesAndSkipStubs) {
  FatbinFile file;
  file.containers = {Module({Image(ImageKind::kSass, 90)}, /*stub=*/true),
                     Module({Image(ImageKind::kSass, 80)}),
                     Module({Image(ImageKind::kSass, 80), Image(ImageKind::kPtx, 80)})};
  FileVerdict a100 = VerdictFor(file, k80);
  EXPECT_EQ(a100.verdict, Verdict::kSass);
  EXPECT_EQ(a100.modules, 2);
  FileVerdict h100 = VerdictFor(file, k90);
  EXPECT_EQ(h100.verdict, Verdict::kPartial);
  EXPECT_EQ(h100.ptx_jit, 1);
  EXPECT_EQ(h100.missing, 1);
  EXPECT_EQ(VerdictFor(file, k70).verdict, Verdict::kMissing);

  FatbinFile ptx_only;
  ptx_only.containers = {Module({Image(ImageKind::kPtx, 80)})};
  EXPECT_EQ(VerdictFor(ptx_only, k90).verdict, Verdict::kPtxJit);

  FatbinFile stubs_only;
  stubs_only.containers = {Module({}, true)};
  EXPECT_EQ(VerdictFor(stubs_only, k90).verdict, Verdict::kNone);
  EXPECT_EQ(VerdictFor(FatbinFile{}, k90).verdict, Verdict::kNone);
}

TEST(CompatTest, OnlyMissingFailsUnlessStrict) {
  EXPECT_TRUE(VerdictFails(Verdict::kMissing, false));
  EXPECT_FALSE(VerdictFails(Verdict::kPartial, false));
  EXPECT_TRUE(VerdictFails(Verdict::kPartial, true));
  EXPECT_FALSE(VerdictFails(Verdict::kPtxJit, true));
  EXPECT_FALSE(VerdictFails(Verdict::kNone, true));
}

TEST(CompatTest, ParsesComputeCapabilities) {
  EXPECT_EQ(*ParseComputeCapability("8.0"), k80);
  EXPECT_EQ(*ParseComputeCapability("10.0"), k100);
  EXPECT_EQ(*ParseComputeCapability("sm_90"), k90);
  EXPECT_EQ(*ParseComputeCapability("120"), k120);
  for (const char* bad : {"", "8", "8.", "x.0", "8.10", "-1.0", "8.0a"}) {
    EXPECT_FALSE(ParseComputeCapability(bad).ok()) << bad;
  }
  Result<std::vector<ComputeCapability>> list = ParseComputeCapabilityList("8.0,9.0, 8.0");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<ComputeCapability>{k80, k90}));
  EXPECT_FALSE(ParseComputeCapabilityList(",").ok());
}

}  // namespace
}  // namespace hetrun::arch

// Real nvcc-built fatbins (tests/runtime/arch/fixtures, built once in the build tree) and, when
// the CUDA toolkit is installed, its own libraries: exact listings and verdicts.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hetrun/arch/compat.h"
#include "hetrun/arch/fatbin.h"
#include "hetrun/arch/image_check.h"

namespace hetrun::arch {
namespace {

const ComputeCapability kTargets[] = {{8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}};

// "stub[sm_80] | sm_80 sm_90 compute_90:zstd ; rel: ..." — one group per container.
std::string Listing(const std::vector<FatbinContainer>& containers) {
  std::string out;
  for (const FatbinContainer& container : containers) {
    if (!out.empty()) out += " | ";
    std::string images;
    for (const FatbinEntry& entry : container.entries) {
      if (!images.empty()) images += ' ';
      images += entry.ArchName();
      if (entry.compression != Compression::kNone) {
        images += ":" + std::string(CompressionName(entry.compression));
      }
    }
    out += container.device_link_stub ? "stub[" + images + "]" : images;
  }
  return out;
}

std::string Verdicts(const FatbinFile& file) {
  std::string out;
  for (const ComputeCapability& target : kTargets) {
    if (!out.empty()) out += ' ';
    out += target.ToString() + "=" + std::string(VerdictName(VerdictFor(file, target).verdict));
  }
  return out;
}

class FatbinFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(HETRUN_ARCH_FIXTURE_DIR).empty()) {
      GTEST_SKIP() << "nvcc not found at configure time: the fatbin fixtures were not built";
    }
  }
  FatbinFile Load(const std::string& name) {
    Result<FatbinFile> file = ReadFatbinFile(std::string(HETRUN_ARCH_FIXTURE_DIR) + "/" + name);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? *file : FatbinFile{};
  }
};

TEST_F(FatbinFixtureTest, Sm80OnlyRunsOnAmpereNotHopper) {
  FatbinFile file = Load("libsm80.so");
  EXPECT_EQ(Listing(file.containers), "stub[sm_80] | sm_80");
  EXPECT_TRUE(file.relocatable.empty());
  EXPECT_EQ(Verdicts(file), "8.0=sass 8.6=sass 8.9=sass 9.0=missing 10.0=missing");
}

TEST_F(FatbinFixtureTest, Sm90OnlyIsTheSeedCrashOnA100) {
  FatbinFile file = Load("libsm90.so");
  EXPECT_EQ(Listing(file.containers), "stub[sm_90] | sm_90");
  EXPECT_EQ(Verdicts(file), "8.0=missing 8.6=missing 8.9=missing 9.0=sass 10.0=missing");
}

TEST_F(FatbinFixtureTest, Sm90aRunsOnlyOnHopper) {
  FatbinFile file = Load("libsm90a.so");
  EXPECT_EQ(Listing(file.containers), "stub[sm_90a] | sm_90a");
  EXPECT_EQ(Verdicts(file), "8.0=missing 8.6=missing 8.9=missing 9.0=sass 10.0=missing");
}

TEST_F(FatbinFixtureTest, Compute90PtxOnlyJitsOnHopperAndNewer) {
  FatbinFile file = Load("libptx90.so");
  EXPECT_EQ(Listing(file.containers), "stub[] | compute_90:zstd");
  EXPECT_EQ(Verdicts(file), "8.0=missing 8.6=missing 8.9=missing 9.0=ptx-jit 10.0=ptx-jit");
}

TEST_F(FatbinFixtureTest, DefaultMultiArchBuildCompressesOnlyPtx) {
  FatbinFile file = Load("libmulti.so");
  EXPECT_EQ(Listing(file.containers), "stub[sm_80 sm_90] | sm_80 sm_90 compute_90:zstd");
  EXPECT_EQ(Verdicts(file), "8.0=sass 8.6=sass 8.9=sass 9.0=sass 10.0=ptx-jit");
}

TEST_F(FatbinFixtureTest, CompressAllUsesZstdForEveryImage) {
  FatbinFile file = Load("libzstd.so");
  EXPECT_EQ(Listing(file.containers),
            "stub[sm_80:zstd sm_90:zstd] | sm_80:zstd sm_90:zstd compute_90:zstd");
  EXPECT_EQ(Verdicts(file), "8.0=sass 8.6=sass 8.9=sass 9.0=sass 10.0=ptx-jit");
}

TEST_F(FatbinFixtureTest, SpeedModeUsesLz4AndDecompressesToCubinsAndPtx) {
  const std::string path = std::string(HETRUN_ARCH_FIXTURE_DIR) + "/liblz4.so";
  Result<ElfFile> elf = ElfFile::Open(path);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  Result<FatbinFile> file = ReadFatbinFile(*elf);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(Listing(file->containers),
            "stub[sm_80:lz4 sm_90:lz4] | sm_80:lz4 sm_90:lz4 compute_90:lz4");
  EXPECT_EQ(Verdicts(*file), "8.0=sass 8.6=sass 8.9=sass 9.0=sass 10.0=ptx-jit");
  const FatbinContainer& module = file->containers.back();
  Result<std::string> cubin = ReadEntryImage(*elf, module.entries[0]);
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(cubin->substr(0, 4),
            "\x7f"
            "ELF");
  Result<std::string> ptx = ReadEntryImage(*elf, module.entries[2]);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(*PtxTarget(*ptx), "sm_90");
}

TEST_F(FatbinFixtureTest, ZstdPtxDecompressesToItsTarget) {
  Result<ElfFile> elf = ElfFile::Open(std::string(HETRUN_ARCH_FIXTURE_DIR) + "/libzstd.so");
  ASSERT_TRUE(elf.ok());
  Result<FatbinFile> file = ReadFatbinFile(*elf);
  ASSERT_TRUE(file.ok());
  Result<std::string> cubin = ReadEntryImage(*elf, file->containers.back().entries[1]);
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_EQ(cubin->substr(0, 4),
            "\x7f"
            "ELF");
  Result<std::string> ptx = ReadEntryImage(*elf, file->containers.back().entries[2]);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(*PtxTarget(*ptx), "sm_90");
}

TEST_F(FatbinFixtureTest, RdcLoadsOnlyLinkedCubinsAndReportsPrelinkSeparately) {
  FatbinFile file = Load("librdc.so");
  // The device-linked module is the real one; its PTX survives only in __nv_relfatbin.
  EXPECT_EQ(Listing(file.containers), "sm_80 sm_90");
  EXPECT_EQ(Listing(file.relocatable), "sm_80:zstd sm_90:zstd compute_90:zstd");
  EXPECT_EQ(Verdicts(file), "8.0=sass 8.6=sass 8.9=sass 9.0=sass 10.0=missing");
}

TEST_F(FatbinFixtureTest, SeveralTranslationUnitsGiveSeveralModules) {
  FatbinFile file = Load("libtwo.so");
  EXPECT_EQ(Listing(file.containers),
            "stub[sm_80 sm_90] | sm_80 sm_90 compute_90:zstd | sm_80 sm_90 compute_90:zstd");
  EXPECT_EQ(file.ModuleCount(), 2u);
  EXPECT_EQ(Verdicts(file), "8.0=sass 8.6=sass 8.9=sass 9.0=sass 10.0=ptx-jit");
}

TEST_F(FatbinFixtureTest, ExecutableCarriesItsKernels) {
  FatbinFile file = Load("app");
  EXPECT_EQ(Listing(file.containers), "stub[sm_80 sm_90] | sm_80 sm_90");
  EXPECT_EQ(Verdicts(file), "8.0=sass 8.6=sass 8.9=sass 9.0=sass 10.0=missing");
}

TEST_F(FatbinFixtureTest, DirectoryScanFindsEveryFixtureOnce) {
  std::vector<ScannedFile> files = ScanKernelImages({HETRUN_ARCH_FIXTURE_DIR});
  std::vector<std::string> names;
  for (const ScannedFile& f : files) {
    EXPECT_FALSE(f.error) << f.path << ": " << f.error->message();
    names.push_back(std::filesystem::path(f.path).filename().string());
  }
  // fixtures.stamp is not ELF: skipped quietly.
  EXPECT_EQ(names, (std::vector<std::string>{"app", "liblz4.so", "libmulti.so", "libptx90.so",
                                             "librdc.so", "libsm80.so", "libsm90.so", "libsm90a.so",
                                             "libtwo.so", "libzstd.so"}));
}

const char* const kToolkitLibs[] = {"/usr/local/cuda/lib64/libnccl.so.2",
                                    "/usr/local/cuda/lib64/libcusparse.so.12"};

TEST(ToolkitLibraryTest, VendorLibrariesRunOnAmpereAndHopperButNotFullyOnVolta) {
  bool any = false;
  for (const char* path : kToolkitLibs) {
    if (!std::filesystem::exists(path)) continue;
    any = true;
    Result<FatbinFile> file = ReadFatbinFile(std::string(path));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_GT(file->ModuleCount(), 1u) << path;
    for (ComputeCapability cc : {ComputeCapability{8, 0}, ComputeCapability{9, 0}}) {
      const Verdict v = VerdictFor(*file, cc).verdict;
      EXPECT_TRUE(v == Verdict::kSass || v == Verdict::kPartial)
          << path << " on " << cc.ToString() << ": " << VerdictName(v);
    }
    // No .nv_fatbin module runs on Volta; libcusparse's .rodata containers (one module, loaded by
    // the library itself) do carry sm_70 images, so it is partial there: 1 module of 134.
    const FileVerdict volta = VerdictFor(*file, {7, 0});
    EXPECT_EQ(volta.verdict, file->embedded.empty() ? Verdict::kMissing : Verdict::kPartial)
        << path;
    EXPECT_EQ(volta.sass + volta.ptx_jit, file->embedded.empty() ? 0 : 1) << path;
  }
  if (!any) GTEST_SKIP() << "CUDA toolkit libraries not installed in /usr/local/cuda/lib64";
}

TEST(ToolkitLibraryTest, NcclHasSixteenModulesOfZstdImagesAndFamilyOnlyModules) {
  const std::string path = kToolkitLibs[0];
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not installed";
  Result<FatbinFile> file = ReadFatbinFile(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->containers.size(), 16u);
  size_t entries = 0;
  size_t family_only = 0;
  for (const FatbinContainer& container : file->containers) {
    entries += container.entries.size();
    for (const FatbinEntry& entry : container.entries) {
      EXPECT_EQ(entry.compression, Compression::kZstd);
    }
    if (container.entries.size() == 1 && container.entries[0].family) ++family_only;
  }
  EXPECT_EQ(entries, 87u);
  EXPECT_EQ(family_only, 4u);
  FileVerdict a100 = VerdictFor(*file, {8, 0});
  EXPECT_EQ(a100.verdict, Verdict::kPartial);
  EXPECT_EQ(a100.missing, 4);
  EXPECT_EQ(VerdictFor(*file, {10, 0}).verdict, Verdict::kSass);
}

}  // namespace
}  // namespace hetrun::arch

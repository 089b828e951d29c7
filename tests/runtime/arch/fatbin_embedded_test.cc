// Fatbin containers in data sections, as cuFFT ships them (no wrapper record, no
// .nvFatBinSegment): the fixtures fixtures/embedded/make_embedded_fixtures.sh builds in the build
// tree (skipped without nvcc) and crafted bytes for the lookalikes the search must not count.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hetrun/arch/compat.h"
#include "hetrun/arch/fatbin.h"
#include "hetrun/arch/image_check.h"

namespace hetrun::arch {
namespace {

const std::string kDir = std::string(HETRUN_ARCH_EMBEDDED_DIR) + "/";

// The fixture-backed tests skip where nvcc was not found; the crafted-bytes tests below run
// everywhere.
#define HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES()                                                 \
  if (std::string(HETRUN_ARCH_EMBEDDED_DIR).empty())                                            \
  GTEST_SKIP() << "nvcc not found at configure time: the embedded-container fixtures were not " \
                  "built"

FatbinFile Load(const std::string& name) {
  Result<FatbinFile> file = ReadFatbinFile(kDir + name);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? *file : FatbinFile{};
}

// "section:arch[:compression] ..." for the embedded containers.
std::string Embedded(const FatbinFile& file) {
  std::string out;
  for (const FatbinContainer& container : file.embedded) {
    for (const FatbinEntry& entry : container.entries) {
      if (!out.empty()) out += ' ';
      out += container.section + ":" + entry.ArchName();
      if (entry.compression != Compression::kNone) {
        out += ":" + std::string(CompressionName(entry.compression));
      }
    }
  }
  return out;
}

std::string Verdict(const FatbinFile& file, int major, int minor) {
  return std::string(VerdictName(VerdictFor(file, {major, minor}).verdict));
}

TEST(FatbinEmbeddedTest, ContainersInLdataAreFoundAndTheLookalikeBetweenThemIsSkipped) {
  HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES();
  const FatbinFile file = Load("libldata.so");
  EXPECT_FALSE(file.has_fatbin);
  EXPECT_EQ(Embedded(file), ".ldata:sm_80 .ldata:sm_90:zstd .ldata:compute_90:zstd");
  EXPECT_EQ(file.ModuleCount(), 1u);
}

TEST(FatbinEmbeddedTest, EmbeddedContainersAreOneModuleThatRunsWhenAnyOfThemDoes) {
  HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES();
  const FatbinFile file = Load("libldata.so");
  EXPECT_EQ(Verdict(file, 8, 0), "sass");
  EXPECT_EQ(Verdict(file, 8, 6), "sass");
  EXPECT_EQ(Verdict(file, 9, 0), "sass");
  EXPECT_EQ(Verdict(file, 10, 0), "ptx-jit");  // compute_90 JIT-compiles on Blackwell
  EXPECT_EQ(Verdict(file, 7, 5), "missing");
}

TEST(FatbinEmbeddedTest, ContainersInRodataCountToo) {
  HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES();
  const FatbinFile file = Load("librodata.so");
  EXPECT_EQ(Embedded(file), ".rodata:sm_80");
  EXPECT_EQ(Verdict(file, 8, 0), "sass");
  EXPECT_EQ(Verdict(file, 9, 0), "missing");
}

TEST(FatbinEmbeddedTest, OnlyLookalikesGiveNoContainerAndNoError) {
  HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES();
  const FatbinFile file = Load("libldata_fake.so");
  EXPECT_TRUE(file.embedded.empty());
  EXPECT_EQ(Verdict(file, 8, 0), "none");
}

TEST(FatbinEmbeddedTest, KernelFreeNvFatbinContainerWithoutWrapperIsAStubLikeCufft) {
  HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES();
  const FatbinFile file = Load("libstub_ldata.so");
  ASSERT_EQ(file.containers.size(), 1u);
  EXPECT_EQ(file.containers[0].section, ".nv_fatbin");
  EXPECT_EQ(file.containers[0].entries.at(0).ArchName(), "sm_75");
  EXPECT_TRUE(file.containers[0].device_link_stub);
  EXPECT_EQ(Embedded(file), ".ldata:sm_90:zstd");
  EXPECT_EQ(file.ModuleCount(), 1u);
  EXPECT_EQ(Verdict(file, 9, 0), "sass");
  EXPECT_EQ(Verdict(file, 8, 0), "missing");
}

TEST(FatbinEmbeddedTest, CheckPassesTheCufftLayoutForItsArchitectures) {
  HETRUN_SKIP_WITHOUT_EMBEDDED_FIXTURES();
  const ArchCheckReport pass = CheckKernelImages(ScanKernelImages({kDir + "libstub_ldata.so"}),
                                                 {{9, 0}}, /*strict=*/true, std::nullopt);
  EXPECT_TRUE(pass.Outcome().ok()) << pass.Outcome().ToString();
  const ArchCheckReport fail = CheckKernelImages(ScanKernelImages({kDir + "libstub_ldata.so"}),
                                                 {{8, 0}, {9, 0}}, false, std::nullopt);
  EXPECT_EQ(fail.Outcome().code(), StatusCode::kArchMismatch);
}

// A minimal ELF with one section `name` holding `contents` at an 8-aligned file offset.
std::vector<uint8_t> ElfWithSection(const std::string& name, const std::vector<uint8_t>& contents) {
  const std::string names = std::string("\0", 1) + name + '\0' + ".shstrtab" + '\0';
  const uint64_t data_offset = 64;
  const uint64_t names_offset = data_offset + contents.size();
  const uint64_t shoff = (names_offset + names.size() + 7) / 8 * 8;
  std::vector<uint8_t> out(shoff + 3 * 64, 0);
  auto put = [&out](uint64_t at, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<uint8_t>(value >> (8 * i));
  };
  std::memcpy(out.data(),
              "\x7f"
              "ELF\x02\x01\x01",
              7);
  put(16, 3, 2);   // ET_DYN
  put(18, 62, 2);  // x86-64
  put(0x28, shoff, 8);
  put(0x3a, 64, 2);  // section header size
  put(0x3c, 3, 2);   // sections
  put(0x3e, 2, 2);   // name table index
  std::memcpy(out.data() + data_offset, contents.data(), contents.size());
  std::memcpy(out.data() + names_offset, names.data(), names.size());
  const uint64_t h1 = shoff + 64;
  put(h1, 1, 4);      // name
  put(h1 + 4, 1, 4);  // PROGBITS
  put(h1 + 0x18, data_offset, 8);
  put(h1 + 0x20, contents.size(), 8);
  const uint64_t h2 = shoff + 128;
  put(h2, 2 + name.size(), 4);
  put(h2 + 4, 3, 4);  // STRTAB
  put(h2 + 0x18, names_offset, 8);
  put(h2 + 0x20, names.size(), 8);
  return out;
}

// A container header (version 1, 16 bytes) with one entry of `kind` for `sm`, `payload` bytes.
std::vector<uint8_t> Container(uint16_t kind, uint32_t sm, uint64_t payload) {
  std::vector<uint8_t> out(16 + 64 + payload, 0);
  auto put = [&out](uint64_t at, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<uint8_t>(value >> (8 * i));
  };
  put(0, kFatbinMagic, 4);
  put(4, 1, 2);
  put(6, 16, 2);
  put(8, 64 + payload, 8);
  put(16, kind, 2);
  put(20, 64, 4);
  put(24, payload, 8);
  put(44, sm, 4);
  return out;
}

std::vector<FatbinContainer> Found(const std::vector<uint8_t>& bytes) {
  Result<ElfFile> elf = ElfFile::FromBytes(bytes, "crafted");
  EXPECT_TRUE(elf.ok()) << elf.status().ToString();
  if (!elf.ok()) return {};
  const ElfSection* section = elf->FindSection(".ldata");
  return section == nullptr ? std::vector<FatbinContainer>{}
                            : FindEmbeddedContainers(*elf, *section);
}

TEST(FatbinEmbeddedTest, CraftedContainerIsFoundWithItsArch) {
  const std::vector<FatbinContainer> found = Found(ElfWithSection(".ldata", Container(2, 80, 32)));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].entries.at(0).ArchName(), "sm_80");
  EXPECT_EQ(found[0].offset, 64u);
}

TEST(FatbinEmbeddedTest, ContainerNestedInAnothersPayloadIsNotCountedTwice) {
  std::vector<uint8_t> outer = Container(2, 90, 16 + 64 + 32);
  const std::vector<uint8_t> inner = Container(2, 80, 32);
  std::copy(inner.begin(), inner.end(), outer.begin() + 16 + 64);
  const std::vector<FatbinContainer> found = Found(ElfWithSection(".ldata", outer));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].entries.at(0).ArchName(), "sm_90");
}

TEST(FatbinEmbeddedTest, LookalikesAreRejected) {
  std::vector<uint8_t> misaligned(4, 0xaa);  // a real container, but at a 4-aligned offset
  const std::vector<uint8_t> real = Container(2, 80, 32);
  misaligned.insert(misaligned.end(), real.begin(), real.end());
  EXPECT_TRUE(Found(ElfWithSection(".ldata", misaligned)).empty());

  std::vector<uint8_t> version = Container(2, 80, 32);
  version[4] = 2;
  EXPECT_TRUE(Found(ElfWithSection(".ldata", version)).empty());

  std::vector<uint8_t> too_long = Container(2, 80, 32);
  too_long[12] = 1;  // payload size 2^32 + ...: past the section
  EXPECT_TRUE(Found(ElfWithSection(".ldata", too_long)).empty());

  EXPECT_TRUE(Found(ElfWithSection(".ldata", Container(7, 80, 32))).empty());     // unknown kind
  EXPECT_TRUE(Found(ElfWithSection(".ldata", Container(2, 70000, 32))).empty());  // absurd SM

  std::vector<uint8_t> magic_only(64, 0);
  std::memcpy(magic_only.data(), "\x50\xed\x55\xba", 4);
  EXPECT_TRUE(Found(ElfWithSection(".ldata", magic_only)).empty());
}

TEST(FatbinEmbeddedTest, OtherSectionsAreNotSearched) {
  const std::vector<uint8_t> bytes = ElfWithSection(".text", Container(2, 80, 32));
  Result<ElfFile> elf = ElfFile::FromBytes(bytes, "t");
  ASSERT_TRUE(elf.ok());
  Result<FatbinFile> file = ReadFatbinFile(*elf);
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->embedded.empty());
}

}  // namespace
}  // namespace hetrun::arch

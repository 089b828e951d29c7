// The ELF and fatbin readers on hand-made and corrupted bytes: every malformed input is a clear
// error naming the file and the offset, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hetrun/arch/compat.h"
#include "hetrun/arch/elf_file.h"
#include "hetrun/arch/fatbin.h"

namespace hetrun::arch {
namespace {

using Bytes = std::vector<uint8_t>;

void Put(Bytes& out, size_t at, uint64_t value, int width) {
  if (out.size() < at + width) out.resize(at + width, 0);
  for (int i = 0; i < width; ++i) out[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// An entry: 64-byte header + payload of `payload` bytes.
Bytes Entry(uint16_t kind, uint32_t sm, uint64_t flags, uint64_t payload) {
  Bytes e(64 + payload, 0);
  Put(e, 0, kind, 2);
  Put(e, 2, 0x101, 2);
  Put(e, 4, 64, 4);
  Put(e, 8, payload, 8);
  Put(e, 28, sm, 4);
  Put(e, 40, flags, 8);
  return e;
}

Bytes Container(const std::vector<Bytes>& entries) {
  Bytes c(16, 0);
  Put(c, 0, kFatbinMagic, 4);
  Put(c, 4, 1, 2);
  Put(c, 6, 16, 2);
  for (const Bytes& e : entries) c.insert(c.end(), e.begin(), e.end());
  Put(c, 8, c.size() - 16, 8);
  return c;
}

// A 64-bit ELF shared object with one section `name` holding `contents` at file offset 64.
Bytes ElfWith(const Bytes& contents, const char* name = ".nv_fatbin") {
  std::string names = std::string("\0", 1) + name + std::string("\0.shstrtab\0", 11);
  const size_t data = 64;
  const size_t names_at = data + ((contents.size() + 7) & ~size_t{7});
  const size_t headers = names_at + ((names.size() + 7) & ~size_t{7});
  Bytes out(headers + 3 * 64, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(out.data(), ident, sizeof(ident));
  Put(out, 16, 3, 2);
  Put(out, 18, 62, 2);
  Put(out, 0x28, headers, 8);
  Put(out, 0x3a, 64, 2);
  Put(out, 0x3c, 3, 2);
  Put(out, 0x3e, 2, 2);
  std::memcpy(out.data() + data, contents.data(), contents.size());
  std::memcpy(out.data() + names_at, names.data(), names.size());
  const size_t h1 = headers + 64;
  Put(out, h1, 1, 4);
  Put(out, h1 + 4, 1, 4);
  Put(out, h1 + 8, 2, 8);
  Put(out, h1 + 0x10, 0x1000, 8);
  Put(out, h1 + 0x18, data, 8);
  Put(out, h1 + 0x20, contents.size(), 8);
  const size_t h2 = headers + 128;
  Put(out, h2, 2 + std::strlen(name), 4);
  Put(out, h2 + 4, 3, 4);
  Put(out, h2 + 0x18, names_at, 8);
  Put(out, h2 + 0x20, names.size(), 8);
  return out;
}

Result<FatbinFile> Read(const Bytes& elf) {
  HETRUN_ASSIGN_OR_RETURN(ElfFile file, ElfFile::FromBytes(elf, "test.so"));
  return ReadFatbinFile(file);
}

void ExpectError(const Result<FatbinFile>& result, const std::string& offset,
                 const std::string& words) {
  ASSERT_FALSE(result.ok());
  const std::string& message = result.status().message();
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("test.so"), std::string::npos) << message;
  EXPECT_NE(message.find("offset " + offset), std::string::npos) << message;
  EXPECT_NE(message.find(words), std::string::npos) << message;
}

TEST(FatbinBoundsTest, ReadsWellFormedSyntheticContainers) {
  Bytes section = Container({Entry(2, 80, 0x11, 16), Entry(1, 90, 0x100011, 8)});
  Bytes second = Container({Entry(2, 100, 0x200011, 8)});
  section.insert(section.end(), 8, 0);  // padding between containers
  section.insert(section.end(), second.begin(), second.end());
  Result<FatbinFile> file = Read(ElfWith(section));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->containers.size(), 2u);
  ASSERT_EQ(file->containers[0].entries.size(), 2u);
  EXPECT_EQ(file->containers[0].offset, 64u);
  EXPECT_EQ(file->containers[0].entries[0].ArchName(), "sm_80");
  EXPECT_EQ(file->containers[0].entries[1].ArchName(), "compute_90a");
  EXPECT_EQ(file->containers[1].entries[0].ArchName(), "sm_100f");
  EXPECT_EQ(file->ModuleCount(), 2u);
}

TEST(FatbinBoundsTest, EmptyContainerIsAStubNotAModule) {
  Result<FatbinFile> file = Read(ElfWith(Container({})));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->containers.size(), 1u);
  EXPECT_TRUE(file->containers[0].device_link_stub);
  EXPECT_EQ(VerdictFor(*file, {8, 0}).verdict, Verdict::kNone);
}

TEST(FatbinBoundsTest, ContainerSizeThatLiesIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  Put(section, 8, 0xffffffffffffull, 8);
  ExpectError(Read(ElfWith(section)), "0x48", "payload size");
}

TEST(FatbinBoundsTest, EntryPayloadSizeThatLiesIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  Put(section, 16 + 8, 4096, 8);
  ExpectError(Read(ElfWith(section)), "0x58", "runs past the end of its container");
}

TEST(FatbinBoundsTest, ZeroEntryHeaderSizeIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  Put(section, 16 + 4, 0, 4);
  ExpectError(Read(ElfWith(section)), "0x54", "header size 0");
}

TEST(FatbinBoundsTest, AbsurdEntryHeaderSizeIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  Put(section, 16 + 4, 0xffffffff, 4);
  ExpectError(Read(ElfWith(section)), "0x54", "header size");
}

TEST(FatbinBoundsTest, TruncatedContainerHeaderIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  section.resize(12);
  ExpectError(Read(ElfWith(section)), "0x40", "truncated fatbin container header");
}

TEST(FatbinBoundsTest, TruncatedEntryHeaderIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  section.resize(16 + 40);
  Put(section, 8, 40, 8);
  ExpectError(Read(ElfWith(section)), "0x50", "truncated fatbin entry header");
}

TEST(FatbinBoundsTest, GarbageInsteadOfMagicIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x11, 16)});
  Put(section, 0, 0xdeadbeef, 4);
  ExpectError(Read(ElfWith(section)), "0x40", "magic");
}

TEST(FatbinBoundsTest, CompressedSizeLargerThanPayloadIsAnError) {
  Bytes section = Container({Entry(2, 80, 0x8011, 16)});
  Put(section, 16 + 16, 17, 4);
  ExpectError(Read(ElfWith(section)), "0x60", "compressed size");
}

TEST(FatbinBoundsTest, CorruptCompressedPayloadFailsToDecompressCleanly) {
  Bytes section = Container({Entry(1, 90, 0x8011, 16)});
  Put(section, 16 + 16, 16, 4);
  Put(section, 16 + 56, 1000, 8);
  Bytes elf = ElfWith(section);
  Result<ElfFile> file = ElfFile::FromBytes(elf, "test.so");
  ASSERT_TRUE(file.ok());
  Result<FatbinFile> images = ReadFatbinFile(*file);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  Result<std::string> image = ReadEntryImage(*file, images->containers[0].entries[0]);
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("ZSTD_decompress"), std::string::npos)
      << image.status().message();
  Put(section, 16 + 40, 0x2011, 8);  // LZ4
  elf = ElfWith(section);
  file = ElfFile::FromBytes(elf, "test.so");
  images = ReadFatbinFile(*file);
  ASSERT_TRUE(images.ok());
  image = ReadEntryImage(*file, images->containers[0].entries[0]);
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("LZ4"), std::string::npos) << image.status().message();
}

TEST(FatbinBoundsTest, SectionPastEndOfFileIsAnError) {
  Bytes elf = ElfWith(Container({Entry(2, 80, 0x11, 16)}));
  const size_t headers = elf.size() - 3 * 64;
  Put(elf, headers + 64 + 0x20, 1 << 30, 8);
  Result<FatbinFile> file = Read(elf);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("runs past the end of the file"), std::string::npos)
      << file.status().message();
}

TEST(FatbinBoundsTest, RejectsNonElfAnd32BitAndTruncatedElf) {
  Bytes text = {'h', 'e', 'l', 'l', 'o'};
  Result<ElfFile> not_elf = ElfFile::FromBytes(text, "x.txt");
  ASSERT_FALSE(not_elf.ok());
  EXPECT_NE(not_elf.status().message().find("x.txt: offset 0x0: not an ELF file"),
            std::string::npos)
      << not_elf.status().message();

  Bytes elf32(64, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
  std::memcpy(elf32.data(), ident, sizeof(ident));
  Result<ElfFile> small = ElfFile::FromBytes(elf32, "lib32.so");
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("only 64-bit"), std::string::npos);

  Bytes truncated(ident, ident + sizeof(ident));
  Result<ElfFile> cut = ElfFile::FromBytes(truncated, "cut.so");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated ELF header"), std::string::npos);
}

TEST(FatbinBoundsTest, AbsurdSectionCountIsAnError) {
  Bytes elf = ElfWith(Container({}));
  Put(elf, 0x3c, 0xfff0, 2);
  Result<ElfFile> file = ElfFile::FromBytes(elf, "count.so");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("section headers run past the end"), std::string::npos)
      << file.status().message();
}

TEST(FatbinBoundsTest, EveryTruncationOfAValidFileIsHandled) {
  Bytes elf = ElfWith(Container({Entry(2, 80, 0x11, 16), Entry(1, 90, 0x11, 24)}));
  for (size_t size = 0; size < elf.size(); ++size) {
    Bytes cut(elf.begin(), elf.begin() + static_cast<std::ptrdiff_t>(size));
    Result<ElfFile> file = ElfFile::FromBytes(cut, "cut.so");
    if (file.ok()) (void)ReadFatbinFile(*file);
  }
  for (size_t at = 0; at < elf.size(); ++at) {
    Bytes flipped = elf;
    flipped[at] ^= 0xff;
    Result<ElfFile> file = ElfFile::FromBytes(flipped, "flip.so");
    if (file.ok()) (void)ReadFatbinFile(*file);
  }
}

TEST(FatbinBoundsTest, ReadsPtxTarget) {
  EXPECT_EQ(*PtxTarget(".version 9.0\n.target sm_90a\n.address_size 64\n"), "sm_90a");
  EXPECT_EQ(*PtxTarget("  .target\tsm_80, texmode_independent\n"), "sm_80");
  EXPECT_FALSE(PtxTarget(".version 9.0\n.targets x\n").ok());
  EXPECT_FALSE(PtxTarget("").ok());
}

TEST(FatbinBoundsTest, MissingFileIsNotFound) {
  Result<FatbinFile> file = ReadFatbinFile(std::string("/nonexistent/libx.so"));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("/nonexistent/libx.so"), std::string::npos);
}

TEST(FatbinBoundsTest, EntryClaimingOneGibFromSixteenBytesIsRefusedBeforeAllocating) {
  // Issue 15: a zstd entry of 16 stored bytes whose header claims a 1 GiB image. The claim is
  // refused by the ratio cap (kMaxCompressionRatio), not allocated and then failed.
  Bytes section = Container({Entry(1, 90, 0x8011, 16)});
  Put(section, 16 + 16, 16, 4);
  Put(section, 16 + 56, uint64_t{1} << 30, 8);
  Bytes elf = ElfWith(section);
  Result<ElfFile> file = ElfFile::FromBytes(elf, "test.so");
  ASSERT_TRUE(file.ok());
  Result<FatbinFile> images = ReadFatbinFile(*file);
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  Result<std::string> image = ReadEntryImage(*file, images->containers[0].entries[0]);
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("more than 256 times its 0x10 stored bytes"),
            std::string::npos)
      << image.status().message();
  EXPECT_NE(image.status().message().find("test.so: offset 0x"), std::string::npos)
      << "names the file and the offset";
}

TEST(FatbinBoundsTest, RelativeRelocationsAreFoundForEveryAddressInOnePass) {
  // A .rela.dyn of three R_X86_64_RELATIVE entries (and one of another type).
  Bytes rela;
  auto add = [&](uint64_t where, uint64_t type, uint64_t addend) {
    size_t at = rela.size();
    Put(rela, at, where, 8);
    Put(rela, at + 8, type, 8);
    Put(rela, at + 16, addend, 8);
  };
  add(0x2000, 8, 0x5000);
  add(0x2008, 7, 0x6000);  // R_X86_64_JUMP_SLOT: not relative
  add(0x2010, 8, 0x7000);
  add(0x2010, 8, 0x9999);  // a second one at the same address: the first wins
  Bytes elf = ElfWith(rela, ".rela.dyn");
  const size_t headers = elf.size() - 3 * 64;
  Put(elf, headers + 64 + 4, 4, 4);  // SHT_RELA
  Result<ElfFile> file = ElfFile::FromBytes(elf, "test.so");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const uint64_t wanted[] = {0x2000, 0x2008, 0x2010, 0x3000};
  auto found = file->RelativeRelocationsAt(wanted);
  EXPECT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0x2000], 0x5000u);
  EXPECT_EQ(found[0x2010], 0x7000u);
}

}  // namespace
}  // namespace hetrun::arch

// Fuzzes the ELF and fatbin readers on untrusted bytes: section headers, fatbin containers and
// entries, device-link stub detection, and payload decompression (zstd / LZ4) with the default
// cap (an image is refused beyond 256 times its stored bytes: kMaxCompressionRatio), and the
// search for containers in data sections (inputs whose first byte is odd land in .ldata).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "hetrun/arch/compat.h"
#include "hetrun/arch/elf_file.h"
#include "hetrun/arch/fatbin.h"

namespace {

void Put(std::vector<uint8_t>& out, size_t at, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// A 64-bit ELF shared object whose only sections are .nv_fatbin or .ldata (the input) and the
// name table, so that inputs which are not ELF files still reach the fatbin parser or the
// data-section search.
std::vector<uint8_t> WrapAsElf(const uint8_t* data, size_t size) {
  static const char kNames[] = "\0.nv_fatbin\0.shstrtab\0.ldata\0";
  const bool ldata = size > 0 && (data[0] & 1) != 0;
  const size_t fatbin = 64;
  const size_t names = fatbin + ((size + 7) & ~size_t{7});
  const size_t headers = names + ((sizeof(kNames) + 7) & ~size_t{7});
  std::vector<uint8_t> out(headers + 3 * 64, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(out.data(), ident, sizeof(ident));
  Put(out, 16, 3, 2);   // ET_DYN
  Put(out, 18, 62, 2);  // x86-64
  Put(out, 0x28, headers, 8);
  Put(out, 0x3a, 64, 2);
  Put(out, 0x3c, 3, 2);
  Put(out, 0x3e, 2, 2);
  if (size > 0) std::memcpy(out.data() + fatbin, data, size);
  std::memcpy(out.data() + names, kNames, sizeof(kNames));
  const size_t fatbin_header = headers + 64;
  Put(out, fatbin_header, ldata ? 22 : 1, 4);  // name ".ldata" or ".nv_fatbin"
  Put(out, fatbin_header + 4, 1, 4);           // PROGBITS
  Put(out, fatbin_header + 8, 2, 8);           // ALLOC
  Put(out, fatbin_header + 0x10, 0x1000, 8);
  Put(out, fatbin_header + 0x18, fatbin, 8);
  Put(out, fatbin_header + 0x20, size, 8);
  const size_t names_header = headers + 128;
  Put(out, names_header, 12, 4);  // ".shstrtab"
  Put(out, names_header + 4, 3, 4);
  Put(out, names_header + 0x18, names, 8);
  Put(out, names_header + 0x20, sizeof(kNames), 8);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> wrapped;
  std::span<const uint8_t> bytes(data, size);
  if (!hetrun::arch::HasElfMagic(bytes)) {
    wrapped = WrapAsElf(data, size);
    bytes = wrapped;
  }
  hetrun::Result<hetrun::arch::ElfFile> elf = hetrun::arch::ElfFile::FromBytes(bytes, "fuzz");
  if (!elf.ok()) return 0;
  hetrun::Result<hetrun::arch::FatbinFile> file = hetrun::arch::ReadFatbinFile(*elf);
  if (!file.ok()) return 0;
  std::vector<hetrun::arch::FatbinContainer> all = file->containers;
  all.insert(all.end(), file->embedded.begin(), file->embedded.end());
  for (const auto& container : all) {
    (void)hetrun::arch::ContainerBytes(*elf, container);
    (void)hetrun::arch::FitOf(container, {9, 0});
    for (const auto& entry : container.entries) {
      hetrun::Result<std::string> image = hetrun::arch::ReadEntryImage(*elf, entry);
      if (image.ok()) (void)hetrun::arch::PtxTarget(*image);
    }
  }
  (void)hetrun::arch::VerdictFor(*file, {8, 0});
  return 0;
}

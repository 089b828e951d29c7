// Fatbin containers in data sections (cuFFT's .ldata): found by their header magic, counted only
// when the whole container validates. See FindEmbeddedContainers in hetrun/arch/fatbin.h.
#include <cstring>

#include "arch/byte_reader.h"
#include "arch/fatbin_parse.h"
#include "hetrun/arch/fatbin.h"

namespace hetrun::arch {
namespace {

constexpr uint32_t kShtNobits = 8;
constexpr uint16_t kContainerVersion = 1;
constexpr uint16_t kContainerHeaderSize = 16;
// Containers and their headers are 8-aligned in the file (cuFFT: every one of its 23,983).
constexpr uint64_t kAlignment = 8;
// Real containers hold one image per architecture (tens at most). The cap bounds the work a
// rejected lookalike can cost: each candidate reads at most this many entry headers.
constexpr size_t kMaxEntries = 256;
// Entries name real SM numbers (75, 90, 120 ...); a lookalike's random word rarely does.
constexpr uint32_t kMinSm = 10;
constexpr uint32_t kMaxSm = 999;
// Pages behind the search are dropped from the resident set every this many bytes.
constexpr uint64_t kReleaseStep = uint64_t{8} << 20;

// The container at `pos` when it is a real one: version 1, a 16-byte header, a non-empty
// payload inside the section, and entries of known kinds and plausible SM numbers that fill it.
std::optional<FatbinContainer> ValidContainerAt(const ElfFile& file, const ElfSection& section,
                                                std::span<const uint8_t> bytes, uint64_t pos) {
  if (!InBounds(bytes, pos, kContainerHeaderSize)) return std::nullopt;
  if (LoadLe<uint16_t>(bytes, pos + 4) != kContainerVersion ||
      LoadLe<uint16_t>(bytes, pos + 6) != kContainerHeaderSize ||
      LoadLe<uint64_t>(bytes, pos + 8) == 0) {
    return std::nullopt;
  }
  Result<FatbinContainer> container =
      ParseContainerAt(file, bytes, pos, section.offset, section.address, kMaxEntries);
  if (!container.ok() || container->entries.empty()) return std::nullopt;
  for (const FatbinEntry& entry : container->entries) {
    if (entry.kind == ImageKind::kOther || entry.sm < kMinSm || entry.sm > kMaxSm) {
      return std::nullopt;
    }
  }
  container->section = section.name;
  return std::move(container).value();
}

}  // namespace

std::vector<FatbinContainer> FindEmbeddedContainers(const ElfFile& file,
                                                    const ElfSection& section) {
  std::vector<FatbinContainer> found;
  if (section.type == kShtNobits) return found;
  Result<std::span<const uint8_t>> section_bytes = file.SectionBytes(section);
  if (!section_bytes.ok()) return found;
  const std::span<const uint8_t> bytes = *section_bytes;
  const uint8_t magic[4] = {0x50, 0xed, 0x55, 0xba};  // kFatbinMagic, little-endian
  static_assert(kFatbinMagic == 0xBA55ED50);
  uint64_t pos = 0;
  uint64_t released = 0;
  while (pos < bytes.size()) {
    const void* hit = memmem(bytes.data() + pos, bytes.size() - pos, magic, sizeof(magic));
    if (hit == nullptr) break;
    const uint64_t at = static_cast<const uint8_t*>(hit) - bytes.data();
    if ((section.offset + at) % kAlignment != 0) {
      pos = at + 1;
      continue;
    }
    std::optional<FatbinContainer> container = ValidContainerAt(file, section, bytes, at);
    if (container) {
      pos = at + container->size;  // a magic inside a container is its data, never a container
      found.push_back(std::move(*container));
    } else {
      pos = at + kAlignment;
    }
    if (pos - released >= kReleaseStep && pos <= bytes.size()) {
      file.ReleasePages(bytes.subspan(released, pos - released));
      released = pos;
    }
  }
  file.ReleasePages(bytes.subspan(released));
  return found;
}

}  // namespace hetrun::arch

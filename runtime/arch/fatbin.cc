#include "hetrun/arch/fatbin.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "arch/byte_reader.h"
#include "arch/fatbin_parse.h"

namespace hetrun::arch {
namespace {

constexpr uint64_t kContainerHeaderMin = 16;
constexpr uint64_t kEntryHeaderMin = 64;
// Entry headers seen are 0x40..0x78 bytes; anything far larger is a lying size field.
constexpr uint64_t kEntryHeaderMax = 4096;

constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindElf = 2;
constexpr uint16_t kKindLtoIr = 8;

constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
constexpr uint64_t kFlagArchSpecific = 0x100000;
constexpr uint64_t kFlagFamily = 0x200000;

constexpr uint32_t kWrapperMagic = 0x466243B1;
constexpr uint32_t kWrapperLinkVersion = 2;
constexpr uint64_t kWrapperSize = 24;

bool AllZero(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

Result<FatbinEntry> ParseEntry(const ElfFile& file, std::span<const uint8_t> bytes, uint64_t pos,
                               uint64_t end, uint64_t file_offset) {
  FatbinEntry entry;
  entry.offset = file_offset + pos;
  entry.raw_kind = LoadLe<uint16_t>(bytes, pos);
  entry.header_size = LoadLe<uint32_t>(bytes, pos + 4);
  entry.padded_size = LoadLe<uint64_t>(bytes, pos + 8);
  entry.compressed_size = LoadLe<uint32_t>(bytes, pos + 16);
  entry.code_minor = LoadLe<uint16_t>(bytes, pos + 24);
  entry.code_major = LoadLe<uint16_t>(bytes, pos + 26);
  entry.sm = LoadLe<uint32_t>(bytes, pos + 28);
  entry.flags = LoadLe<uint64_t>(bytes, pos + 40);
  entry.uncompressed_size = LoadLe<uint64_t>(bytes, pos + 56);
  if (entry.header_size < kEntryHeaderMin || entry.header_size > kEntryHeaderMax) {
    return file.ErrorAt(entry.offset + 4,
                        fmt::format("fatbin entry header size {} is not in "
                                    "[{}, {}]",
                                    entry.header_size, kEntryHeaderMin, kEntryHeaderMax));
  }
  if (entry.header_size > end - pos) {
    return file.ErrorAt(entry.offset + 4,
                        fmt::format("fatbin entry header ({} bytes) runs past the end of its "
                                    "container ({} bytes left)",
                                    entry.header_size, end - pos));
  }
  if (entry.padded_size > end - pos - entry.header_size) {
    return file.ErrorAt(entry.offset + 8,
                        fmt::format("fatbin entry payload size {:#x} runs past the end of its "
                                    "container ({:#x} bytes left)",
                                    entry.padded_size, end - pos - entry.header_size));
  }
  switch (entry.raw_kind) {
    case kKindPtx:
      entry.kind = ImageKind::kPtx;
      break;
    case kKindElf:
      entry.kind = ImageKind::kSass;
      break;
    case kKindLtoIr:
      entry.kind = ImageKind::kLtoIr;
      break;
    default:
      entry.kind = ImageKind::kOther;
      break;
  }
  entry.arch_specific = (entry.flags & kFlagArchSpecific) != 0;
  entry.family = (entry.flags & kFlagFamily) != 0;
  const bool lz4 = (entry.flags & kFlagLz4) != 0;
  const bool zstd = (entry.flags & kFlagZstd) != 0;
  if (lz4 && zstd) {
    return file.ErrorAt(
        entry.offset + 40,
        fmt::format("fatbin entry flags {:#x} claim both LZ4 and zstd", entry.flags));
  }
  entry.compression = lz4 ? Compression::kLz4 : zstd ? Compression::kZstd : Compression::kNone;
  if (entry.compression != Compression::kNone) {
    if (entry.compressed_size == 0 || entry.compressed_size > entry.padded_size) {
      return file.ErrorAt(entry.offset + 16,
                          fmt::format("compressed size {:#x} of a {} entry is not in (0, payload "
                                      "size {:#x}]",
                                      entry.compressed_size, CompressionName(entry.compression),
                                      entry.padded_size));
    }
  }
  return entry;
}

}  // namespace

std::string_view ImageKindName(ImageKind kind) {
  switch (kind) {
    case ImageKind::kSass:
      return "sass";
    case ImageKind::kPtx:
      return "ptx";
    case ImageKind::kLtoIr:
      return "lto-ir";
    case ImageKind::kOther:
      return "other";
  }
  return "other";
}

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kZstd:
      return "zstd";
    case Compression::kLz4:
      return "lz4";
  }
  return "none";
}

std::string FatbinEntry::ArchName() const {
  std::string_view prefix;
  switch (kind) {
    case ImageKind::kSass:
      prefix = "sm_";
      break;
    case ImageKind::kPtx:
      prefix = "compute_";
      break;
    case ImageKind::kLtoIr:
      prefix = "lto_";
      break;
    case ImageKind::kOther:
      return fmt::format("kind{}_{}", raw_kind, sm);
  }
  return fmt::format("{}{}{}", prefix, sm, arch_specific ? "a" : family ? "f" : "");
}

uint64_t FatbinEntry::StoredBytes() const {
  return compression == Compression::kNone ? padded_size : compressed_size;
}

uint64_t FatbinEntry::ImageBytes() const {
  return compression == Compression::kNone ? padded_size : uncompressed_size;
}

size_t FatbinFile::ModuleCount() const {
  return static_cast<size_t>(
             std::count_if(containers.begin(), containers.end(),
                           [](const FatbinContainer& c) { return !c.device_link_stub; })) +
         (embedded.empty() ? 0 : 1);
}

Result<FatbinContainer> ParseContainerAt(const ElfFile& file, std::span<const uint8_t> bytes,
                                         uint64_t pos, uint64_t file_offset, uint64_t address,
                                         size_t max_entries) {
  FatbinContainer container;
  container.offset = file_offset + pos;
  container.address = address == 0 ? 0 : address + pos;
  if (!InBounds(bytes, pos, kContainerHeaderMin)) {
    return file.ErrorAt(container.offset, "truncated fatbin container header");
  }
  const uint64_t header_size = LoadLe<uint16_t>(bytes, pos + 6);
  const uint64_t payload_size = LoadLe<uint64_t>(bytes, pos + 8);
  if (header_size < kContainerHeaderMin || header_size > bytes.size() - pos) {
    return file.ErrorAt(container.offset + 6,
                        fmt::format("fatbin container header size {} is invalid", header_size));
  }
  if (payload_size > bytes.size() - pos - header_size) {
    return file.ErrorAt(container.offset + 8,
                        fmt::format("fatbin container payload size {:#x} runs past the end of "
                                    "the section ({:#x} bytes left)",
                                    payload_size, bytes.size() - pos - header_size));
  }
  container.size = header_size + payload_size;
  const uint64_t end = pos + container.size;
  uint64_t entry = pos + header_size;
  while (entry < end) {
    if (end - entry < kEntryHeaderMin) {
      if (AllZero(bytes.subspan(entry, end - entry))) break;
      return file.ErrorAt(file_offset + entry,
                          fmt::format("truncated fatbin entry header ({} bytes left in the "
                                      "container)",
                                      end - entry));
    }
    if (container.entries.size() == max_entries) {
      return file.ErrorAt(file_offset + entry,
                          fmt::format("more than {} entries in one fatbin container", max_entries));
    }
    HETRUN_ASSIGN_OR_RETURN(FatbinEntry parsed, ParseEntry(file, bytes, entry, end, file_offset));
    entry += parsed.header_size + parsed.padded_size;
    container.entries.push_back(std::move(parsed));
  }
  container.device_link_stub = container.entries.empty();
  return container;
}

Result<std::vector<FatbinContainer>> ParseFatbinSection(const ElfFile& file,
                                                        std::span<const uint8_t> bytes,
                                                        uint64_t file_offset, uint64_t address) {
  std::vector<FatbinContainer> containers;
  uint64_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < kContainerHeaderMin) {
      if (AllZero(bytes.subspan(pos))) break;
      return file.ErrorAt(
          file_offset + pos,
          fmt::format("truncated fatbin container header ({} bytes left)", bytes.size() - pos));
    }
    const uint32_t magic = LoadLe<uint32_t>(bytes, pos);
    if (magic != kFatbinMagic) {
      // Containers are 8-aligned; the gaps between them are zero.
      if (LoadLe<uint64_t>(bytes, pos) == 0) {
        pos += 8;
        continue;
      }
      return file.ErrorAt(
          file_offset + pos,
          fmt::format("expected fatbin container magic {:#x}, found {:#x}", kFatbinMagic, magic));
    }
    HETRUN_ASSIGN_OR_RETURN(FatbinContainer container,
                            ParseContainerAt(file, bytes, pos, file_offset, address));
    file.ReleasePages(bytes.subspan(pos, container.size));
    pos += container.size;
    containers.push_back(std::move(container));
  }
  return containers;
}

namespace {

// The data pointers of the .nvFatBinSegment wrappers: which containers the runtime registers,
// and through which wrapper version.
struct WrapperTargets {
  std::vector<uint64_t> link;     ///< version-2 wrappers (nvlink output)
  std::vector<uint64_t> compile;  ///< version-1 wrappers (one per compiled translation unit)
};

WrapperTargets ReadWrappers(const ElfFile& file) {
  WrapperTargets targets;
  constexpr uint16_t kEtRel = 1;
  const ElfSection* segment = file.FindSection(kFatbinWrapperSection);
  if (segment == nullptr || file.type() == kEtRel) return targets;
  Result<std::span<const uint8_t>> bytes = file.SectionBytes(*segment);
  if (!bytes.ok()) return targets;
  struct Wrapper {
    uint32_t version;
    uint64_t data;
    uint64_t address;  ///< of its data pointer
  };
  std::vector<Wrapper> wrappers;
  std::vector<uint64_t> unrelocated;  // data pointers left 0 in place: look for relocations
  for (uint64_t w = 0; w + kWrapperSize <= bytes->size(); w += kWrapperSize) {
    if (LoadLe<uint32_t>(*bytes, w) != kWrapperMagic) continue;
    Wrapper wrapper{LoadLe<uint32_t>(*bytes, w + 4), LoadLe<uint64_t>(*bytes, w + 8),
                    segment->address + w + 8};
    if (wrapper.data == 0) unrelocated.push_back(wrapper.address);
    wrappers.push_back(wrapper);
  }
  const std::unordered_map<uint64_t, uint64_t> relocated = file.RelativeRelocationsAt(unrelocated);
  for (Wrapper& wrapper : wrappers) {
    if (wrapper.data == 0) {
      auto it = relocated.find(wrapper.address);
      if (it != relocated.end()) wrapper.data = it->second;
    }
    if (wrapper.data == 0) continue;
    (wrapper.version == kWrapperLinkVersion ? targets.link : targets.compile)
        .push_back(wrapper.data);
  }
  return targets;
}

// nvlink always emits a module registered through a version-2 wrapper. In a whole-program
// build it links nothing (the "null dlink" stub: SASS only, no kernels); with relocatable
// device code (-rdc, the version-1 wrappers then point into __nv_relfatbin) it is the
// device-linked module that holds the real kernels.
void MarkLinkStubs(const ElfFile& file, const ElfSection* relocatable, FatbinFile& result) {
  const WrapperTargets wrappers = ReadWrappers(file);
  bool separate_compilation = false;
  if (relocatable != nullptr && relocatable->address != 0) {
    for (uint64_t data : wrappers.compile) {
      if (data >= relocatable->address && data - relocatable->address < relocatable->size) {
        separate_compilation = true;
      }
    }
  }
  // A set, not a search per container: many containers and many wrappers stay linear.
  const std::unordered_set<uint64_t> linked_addresses(wrappers.link.begin(), wrappers.link.end());
  for (FatbinContainer& container : result.containers) {
    if (container.device_link_stub) continue;
    const bool sass_only =
        std::all_of(container.entries.begin(), container.entries.end(),
                    [](const FatbinEntry& e) { return e.kind == ImageKind::kSass; });
    if (!sass_only) continue;
    const bool linked = container.address != 0 && linked_addresses.contains(container.address);
    if (linked && !separate_compilation) {
      container.device_link_stub = true;
    } else if (std::all_of(container.entries.begin(), container.entries.end(),
                           [&file](const FatbinEntry& e) { return DefinesNoKernel(file, e); })) {
      // The same stub without a wrapper pointing at it (cuFFT): its cubins have no kernel.
      container.device_link_stub = true;
    }
  }
}

Result<std::vector<FatbinContainer>> ReadSection(const ElfFile& file, const ElfSection& section) {
  HETRUN_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, file.SectionBytes(section));
  HETRUN_ASSIGN_OR_RETURN(std::vector<FatbinContainer> containers,
                          ParseFatbinSection(file, bytes, section.offset, section.address));
  for (FatbinContainer& container : containers) container.section = section.name;
  return containers;
}

}  // namespace

Result<FatbinFile> ReadFatbinFile(const ElfFile& file) {
  FatbinFile result;
  result.path = file.path();
  const ElfSection* relocatable = file.FindSection(kRelocatableFatbinSection);
  if (relocatable != nullptr) {
    HETRUN_ASSIGN_OR_RETURN(result.relocatable, ReadSection(file, *relocatable));
  }
  for (const ElfSection& section : file.sections()) {
    const bool data =
        std::find(std::begin(kEmbeddedFatbinSections), std::end(kEmbeddedFatbinSections),
                  section.name) != std::end(kEmbeddedFatbinSections);
    if (!data) continue;
    std::vector<FatbinContainer> found = FindEmbeddedContainers(file, section);
    std::move(found.begin(), found.end(), std::back_inserter(result.embedded));
  }
  const ElfSection* section = file.FindSection(kFatbinSection);
  if (section == nullptr) return result;
  result.has_fatbin = true;
  HETRUN_ASSIGN_OR_RETURN(result.containers, ReadSection(file, *section));
  MarkLinkStubs(file, relocatable, result);
  return result;
}

Result<FatbinFile> ReadFatbinFile(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(ElfFile file, ElfFile::Open(path));
  return ReadFatbinFile(file);
}

Result<std::span<const uint8_t>> ContainerBytes(const ElfFile& file,
                                                const FatbinContainer& container) {
  if (!InBounds(file.bytes(), container.offset, container.size)) {
    return file.ErrorAt(container.offset, "fatbin container runs past the end of the file");
  }
  return file.bytes().subspan(container.offset, container.size);
}

}  // namespace hetrun::arch

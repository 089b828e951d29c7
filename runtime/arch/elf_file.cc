#include "hetrun/arch/elf_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "arch/byte_reader.h"

namespace hetrun::arch {
namespace {

constexpr uint8_t kElfClass64 = 2;
constexpr uint8_t kElfData2Lsb = 1;
constexpr uint64_t kElfHeaderSize = 64;
constexpr uint64_t kSectionHeaderSize = 64;
constexpr uint32_t kShtNobits = 8;
constexpr uint32_t kShtRela = 4;
constexpr uint64_t kShfAlloc = 0x2;
constexpr uint16_t kEmX8664 = 62;
constexpr uint16_t kEmAarch64 = 183;
constexpr uint32_t kRelX8664Relative = 8;
constexpr uint32_t kRelAarch64Relative = 1027;
// Real files have at most a few thousand sections; more is a corrupt count, not a big file.
constexpr uint64_t kMaxSections = 1 << 20;
constexpr uint64_t kMaxSectionNameLength = 4096;

}  // namespace

bool HasElfMagic(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' &&
         bytes[3] == 'F';
}

Status ElfFile::ErrorAt(uint64_t offset, std::string_view message) const {
  return InvalidArgumentError(fmt::format("{}: offset {:#x}: {}", path_, offset, message));
}

Result<ElfFile> ElfFile::Open(const std::string& path) {
  // O_NONBLOCK: a FIFO without a writer is refused below, not waited on.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return ErrnoError("open", path, errno);
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    int err = errno;
    close(fd);
    return ErrnoError("fstat", path, err);
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return InvalidArgumentError(path + ": not a regular file (a FIFO, device or directory)");
  }
  ElfFile file;
  file.path_ = path;
  if (info.st_size == 0) {
    close(fd);
    return file.ErrorAt(0, "empty file, not an ELF file");
  }
  size_t size = static_cast<size_t>(info.st_size);
  void* base = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) return ErrnoError("mmap", path, err);
  // Headers are scattered over the file: no readahead beyond the pages we touch.
  (void)madvise(base, size, MADV_RANDOM);
  file.mapping_ = std::shared_ptr<const void>(
      base, [size](const void* p) { munmap(const_cast<void*>(p), size); });
  file.bytes_ = std::span<const uint8_t>(static_cast<const uint8_t*>(base), size);
  HETRUN_RETURN_IF_ERROR(file.Parse());
  return file;
}

Result<ElfFile> ElfFile::FromBytes(std::span<const uint8_t> bytes, std::string name) {
  ElfFile file;
  file.path_ = std::move(name);
  file.bytes_ = bytes;
  HETRUN_RETURN_IF_ERROR(file.Parse());
  return file;
}

Status ElfFile::Parse() {
  if (!HasElfMagic(bytes_)) return ErrorAt(0, "not an ELF file (no \\x7fELF magic)");
  if (bytes_.size() < kElfHeaderSize) {
    return ErrorAt(
        0, fmt::format("truncated ELF header ({} bytes, need {})", bytes_.size(), kElfHeaderSize));
  }
  if (bytes_[4] != kElfClass64) {
    return ErrorAt(4, fmt::format("ELF class {} is not supported (only 64-bit ELF)", bytes_[4]));
  }
  if (bytes_[5] != kElfData2Lsb) {
    return ErrorAt(5, "big-endian ELF is not supported (only little-endian)");
  }
  type_ = LoadLe<uint16_t>(bytes_, 16);
  machine_ = LoadLe<uint16_t>(bytes_, 18);
  const uint64_t shoff = LoadLe<uint64_t>(bytes_, 0x28);
  uint64_t shnum = LoadLe<uint16_t>(bytes_, 0x3c);
  uint32_t shstrndx = LoadLe<uint16_t>(bytes_, 0x3e);
  if (shoff == 0) return Status::Ok();  // no section headers (stripped to the bone): no sections
  HETRUN_RETURN_IF_ERROR(CheckSectionTable(shoff, shnum, shstrndx));
  if (shnum == 0) return Status::Ok();
  const uint64_t h = shoff + shstrndx * kSectionHeaderSize;
  const uint64_t names_offset = LoadLe<uint64_t>(bytes_, h + 0x18);
  const uint64_t names_size = LoadLe<uint64_t>(bytes_, h + 0x20);
  if (!InBounds(bytes_, names_offset, names_size)) {
    return ErrorAt(h, fmt::format("section name table ({:#x} bytes at {:#x}) is past the end of "
                                  "the file ({} bytes)",
                                  names_size, names_offset, bytes_.size()));
  }
  sections_.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    HETRUN_ASSIGN_OR_RETURN(ElfSection section, ReadSection(i, shoff + i * kSectionHeaderSize,
                                                            names_offset, names_size));
    sections_.push_back(std::move(section));
  }
  return Status::Ok();
}

Status ElfFile::CheckSectionTable(uint64_t shoff, uint64_t& shnum, uint32_t& shstrndx) const {
  const uint16_t shentsize = LoadLe<uint16_t>(bytes_, 0x3a);
  if (shentsize != kSectionHeaderSize) {
    return ErrorAt(
        0x3a, fmt::format("section header size {} (expected {})", shentsize, kSectionHeaderSize));
  }
  if (!InBounds(bytes_, shoff, kSectionHeaderSize)) {
    return ErrorAt(0x28, fmt::format("section header table at {:#x} is past the end of the file "
                                     "({} bytes)",
                                     shoff, bytes_.size()));
  }
  // Extended numbering: the real count / string-table index live in section header 0.
  if (shnum == 0) shnum = LoadLe<uint64_t>(bytes_, shoff + 0x20);
  if (shstrndx == 0xffff) shstrndx = LoadLe<uint32_t>(bytes_, shoff + 0x28);
  if (shnum > kMaxSections) {
    return ErrorAt(0x3c, fmt::format("absurd section count {}", shnum));
  }
  if (!InBounds(bytes_, shoff, shnum * kSectionHeaderSize)) {
    return ErrorAt(shoff, fmt::format("{} section headers run past the end of the file ({} bytes)",
                                      shnum, bytes_.size()));
  }
  if (shnum != 0 && shstrndx >= shnum) {
    return ErrorAt(0x3e,
                   fmt::format("section name table index {} >= section count {}", shstrndx, shnum));
  }
  return Status::Ok();
}

Result<ElfSection> ElfFile::ReadSection(uint64_t i, uint64_t h, uint64_t names_offset,
                                        uint64_t names_size) const {
  ElfSection section;
  const uint32_t name_index = LoadLe<uint32_t>(bytes_, h);
  section.type = LoadLe<uint32_t>(bytes_, h + 4);
  section.flags = LoadLe<uint64_t>(bytes_, h + 8);
  section.address = LoadLe<uint64_t>(bytes_, h + 0x10);
  section.offset = LoadLe<uint64_t>(bytes_, h + 0x18);
  section.size = LoadLe<uint64_t>(bytes_, h + 0x20);
  section.entry_size = static_cast<uint32_t>(LoadLe<uint64_t>(bytes_, h + 0x38));
  if (name_index >= names_size && i != 0) {
    return ErrorAt(h, fmt::format("section {} name index {} is outside the name table "
                                  "({} bytes)",
                                  i, name_index, names_size));
  }
  if (name_index < names_size) {
    const uint8_t* start = bytes_.data() + names_offset + name_index;
    const uint64_t limit = std::min<uint64_t>(names_size - name_index, kMaxSectionNameLength);
    const void* nul = std::memchr(start, 0, limit);
    if (nul == nullptr) {
      return ErrorAt(names_offset + name_index,
                     fmt::format("section {} name is not terminated", i));
    }
    section.name.assign(reinterpret_cast<const char*>(start),
                        static_cast<const uint8_t*>(nul) - start);
  }
  return section;
}

const ElfSection* ElfFile::FindSection(std::string_view name) const {
  for (const ElfSection& section : sections_) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

Result<std::span<const uint8_t>> ElfFile::SectionBytes(const ElfSection& section) const {
  if (section.type == kShtNobits) {
    return ErrorAt(section.offset, "section " + section.name + " has no contents in the file");
  }
  if (!InBounds(bytes_, section.offset, section.size)) {
    return ErrorAt(section.offset,
                   fmt::format("section {} ({:#x} bytes) runs past the end of the file "
                               "({} bytes)",
                               section.name, section.size, bytes_.size()));
  }
  return bytes_.subspan(section.offset, section.size);
}

std::optional<uint64_t> ElfFile::FileOffsetOfAddress(uint64_t address, uint64_t size) const {
  for (const ElfSection& section : sections_) {
    if ((section.flags & kShfAlloc) == 0 || section.type == kShtNobits) continue;
    if (address < section.address || address - section.address > section.size ||
        size > section.size - (address - section.address)) {
      continue;
    }
    const uint64_t offset = section.offset + (address - section.address);
    if (!InBounds(bytes_, offset, size)) return std::nullopt;
    return offset;
  }
  return std::nullopt;
}

void ElfFile::ReleasePages(std::span<const uint8_t> range) const {
  if (!mapping_ || range.empty()) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t end = begin + range.size();
  const auto lo = reinterpret_cast<uintptr_t>(bytes_.data());
  const uintptr_t hi = lo + bytes_.size();
  if (begin < lo || end > hi) return;
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = end / page * page;
  if (first >= last) return;
  // Advisory: a failure only means the pages stay resident, so the result is not an error.
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

std::unordered_map<uint64_t, uint64_t> ElfFile::RelativeRelocationsAt(
    std::span<const uint64_t> addresses) const {
  std::unordered_map<uint64_t, uint64_t> found;
  uint32_t relative = 0;
  if (machine_ == kEmX8664) {
    relative = kRelX8664Relative;
  } else if (machine_ == kEmAarch64) {
    relative = kRelAarch64Relative;
  } else {
    return found;
  }
  // One pass over the relocations with a hash lookup each: a crafted file with many wrappers
  // and many relocations stays linear (a scan per address was quadratic: 26 s for 1 MB).
  std::unordered_map<uint64_t, bool> wanted;
  for (uint64_t address : addresses) wanted.emplace(address, false);
  if (wanted.empty()) return found;
  constexpr uint64_t kRelaSize = 24;
  for (const ElfSection& section : sections_) {
    if (section.type != kShtRela || (section.flags & kShfAlloc) == 0) continue;
    if (!InBounds(bytes_, section.offset, section.size)) continue;
    for (uint64_t r = section.offset; r + kRelaSize <= section.offset + section.size;
         r += kRelaSize) {
      auto it = wanted.find(LoadLe<uint64_t>(bytes_, r));
      if (it == wanted.end() || it->second) continue;
      if ((LoadLe<uint64_t>(bytes_, r + 8) & 0xffffffffu) != relative) continue;
      it->second = true;  // the first relocation at an address wins, as the old scan did
      found.emplace(it->first, LoadLe<uint64_t>(bytes_, r + 16));
    }
  }
  return found;
}

}  // namespace hetrun::arch

// A read-only view of a 64-bit little-endian ELF file (executable, shared object or relocatable
// object), memory-mapped so that reading section headers and fatbin headers touches only the
// pages it needs. No CUDA needed. Every read is bounds-checked: a truncated or lying file is an
// error naming the file and the offset, never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::arch {

/// One section header, with its name resolved.
struct ElfSection {
  std::string name;
  uint32_t type = 0;     ///< SHT_*
  uint64_t flags = 0;    ///< SHF_*
  uint64_t address = 0;  ///< virtual address when loaded (0 in relocatable objects)
  uint64_t offset = 0;   ///< file offset of the contents
  uint64_t size = 0;     ///< bytes
  uint32_t entry_size = 0;
};

/// True when `bytes` starts with the ELF magic (any class or byte order).
bool HasElfMagic(std::span<const uint8_t> bytes);

class ElfFile {
 public:
  /// Maps `path` read-only. kNotFound / kInvalidArgument for unreadable files; kInvalidArgument
  /// for anything that is not a well-formed 64-bit little-endian ELF file.
  static Result<ElfFile> Open(const std::string& path);

  /// Parses bytes owned by the caller (tests, fuzzing); `bytes` must outlive the ElfFile.
  /// `name` is used in error messages.
  static Result<ElfFile> FromBytes(std::span<const uint8_t> bytes, std::string name);

  const std::string& path() const { return path_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  uint16_t type() const { return type_; }  ///< ET_REL, ET_EXEC, ET_DYN ...
  const std::vector<ElfSection>& sections() const { return sections_; }

  /// The first section called `name`, or nullptr.
  const ElfSection* FindSection(std::string_view name) const;

  /// The contents of `section`; an error for SHT_NOBITS or contents outside the file.
  Result<std::span<const uint8_t>> SectionBytes(const ElfSection& section) const;

  /// The file offset of `size` bytes at virtual address `address`, when they lie inside the file
  /// contents of one allocated section.
  std::optional<uint64_t> FileOffsetOfAddress(uint64_t address, uint64_t size) const;

  /// The addends of the R_X86_64_RELATIVE / R_AARCH64_RELATIVE dynamic relocations at
  /// `addresses` (how a PIE or shared object records a pointer that the linker left as 0 in
  /// place), keyed by address; addresses without one are absent. One pass over the relocation
  /// sections whatever the number of addresses: linear in the file.
  std::unordered_map<uint64_t, uint64_t> RelativeRelocationsAt(
      std::span<const uint64_t> addresses) const;

  /// Drops the pages wholly inside `range` (a subspan of bytes()) from this process's resident
  /// set; they are read again from the page cache if touched later. Walking a 200 MB library
  /// would otherwise keep every page the kernel mapped around each header resident. No-op for
  /// FromBytes files.
  void ReleasePages(std::span<const uint8_t> range) const;

  /// "FILE: offset 0x1234: MESSAGE" as an invalid-argument error.
  Status ErrorAt(uint64_t offset, std::string_view message) const;

 private:
  ElfFile() = default;
  Status Parse();
  /// Checks the section header table; sets `shnum` and `shstrndx` (extended numbering read).
  Status CheckSectionTable(uint64_t shoff, uint64_t& shnum, uint32_t& shstrndx) const;
  /// Reads section header `i` at `h`, its name from the table at `names_offset`.
  Result<ElfSection> ReadSection(uint64_t i, uint64_t h, uint64_t names_offset,
                                 uint64_t names_size) const;

  std::shared_ptr<const void> mapping_;  ///< keeps the mmap alive; null for FromBytes
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint16_t type_ = 0;
  uint16_t machine_ = 0;
  std::vector<ElfSection> sections_;
};

}  // namespace hetrun::arch

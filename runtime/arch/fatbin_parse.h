// Parsing one fatbin container at a position of a section (private to runtime/arch): shared by
// the .nv_fatbin reader (fatbin.cc) and the data-section search (fatbin_scan.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hetrun/arch/fatbin.h"

namespace hetrun::arch {

/// The container whose header is at `pos` of `bytes` (a section found at `file_offset` and
/// virtual address `address` of `file`): header, then every entry, each bounds-checked against
/// the container and the section, at most `max_entries` of them. An error names the file offset
/// of the first bad field.
Result<FatbinContainer> ParseContainerAt(const ElfFile& file, std::span<const uint8_t> bytes,
                                         uint64_t pos, uint64_t file_offset, uint64_t address,
                                         size_t max_entries = SIZE_MAX);

}  // namespace hetrun::arch

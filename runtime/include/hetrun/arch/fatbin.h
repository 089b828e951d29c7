// CUDA fatbinary containers inside ELF files: what kernel images a file carries, for which GPU
// architectures, without CUDA and without decompressing anything (the architecture, flags and
// sizes are in the uncompressed entry headers). Layout: shared/reference/cuda_facts.md §2.
//
// A section (.nv_fatbin, or __nv_relfatbin for relocatable device code) holds containers, each
// one registered module: magic 0xBA55ED50, u16 version, u16 header size, u64 payload size; the
// payload is a run of entries (u16 kind, u32 header size, u64 padded payload size, u32 SM,
// u64 flags ...). Every read is bounds-checked; corrupt input is an error naming the file and
// the file offset.
//
// Some libraries (cuFFT) also carry containers in their data sections (.ldata, .lrodata, .rodata,
// .data) with no wrapper record: the library picks one and loads it itself. Those are found by
// their header magic at 8-aligned file offsets and counted only when the whole container
// validates (fatbin_scan.cc); a lookalike is skipped, never an error.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/arch/elf_file.h"
#include "hetrun/base/status.h"

namespace hetrun::arch {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr std::string_view kFatbinSection = ".nv_fatbin";
inline constexpr std::string_view kRelocatableFatbinSection = "__nv_relfatbin";
inline constexpr std::string_view kFatbinWrapperSection = ".nvFatBinSegment";
/// Data sections searched for containers the library loads itself (cuFFT: .ldata).
inline constexpr std::string_view kEmbeddedFatbinSections[] = {".ldata", ".lrodata", ".rodata",
                                                               ".data"};

enum class ImageKind { kSass, kPtx, kLtoIr, kOther };
enum class Compression { kNone, kZstd, kLz4 };

/// "sass", "ptx", "lto-ir", "other".
std::string_view ImageKindName(ImageKind kind);
/// "none", "zstd", "lz4".
std::string_view CompressionName(Compression compression);

/// One image (entry) of a container.
struct FatbinEntry {
  uint64_t offset = 0;  ///< file offset of the entry header
  uint16_t raw_kind = 0;
  ImageKind kind = ImageKind::kOther;
  uint32_t sm = 0;             ///< 80, 90, 100 ...
  bool arch_specific = false;  ///< `a` (sm_90a): runs on exactly this SM only
  bool family = false;         ///< `f` (sm_100f): same major, minor >= this one
  Compression compression = Compression::kNone;
  uint64_t header_size = 0;
  uint64_t padded_size = 0;        ///< payload bytes reserved after the header (next entry after)
  uint64_t compressed_size = 0;    ///< 0 when not compressed
  uint64_t uncompressed_size = 0;  ///< 0 when not compressed
  uint16_t code_major = 0;         ///< ELF code version [1,8] or PTX ISA [9,0]
  uint16_t code_minor = 0;
  uint64_t flags = 0;

  /// "sm_90a", "compute_90", "lto_90", "kind7_90".
  std::string ArchName() const;
  /// Bytes the image occupies in the file (compressed size when compressed).
  uint64_t StoredBytes() const;
  /// Bytes of the image once decompressed.
  uint64_t ImageBytes() const;
};

/// One container (one module registered with the CUDA runtime).
struct FatbinContainer {
  uint64_t offset = 0;   ///< file offset of the container header
  uint64_t size = 0;     ///< header + payload bytes
  uint64_t address = 0;  ///< virtual address when loaded (0 in relocatable objects)
  std::string section;   ///< where it was found: ".nv_fatbin", "__nv_relfatbin", ".ldata" ...
  std::vector<FatbinEntry> entries;
  /// An nvlink device-link stub, not a kernel module: an empty container, or the SASS-only
  /// container a version-2 (link) wrapper registers in a whole-program build. Skipped by the
  /// compatibility verdicts. Also a SASS-only container whose cubins define no kernel (cuFFT's
  /// .nv_fatbin holds such an nvlink output and no wrapper registers it).
  bool device_link_stub = false;
};

/// The kernel images of one ELF file.
struct FatbinFile {
  std::string path;
  bool has_fatbin = false;                   ///< a .nv_fatbin section exists
  std::vector<FatbinContainer> containers;   ///< .nv_fatbin: what the runtime loads
  std::vector<FatbinContainer> relocatable;  ///< __nv_relfatbin: pre-link copies (-rdc)
  /// Containers found in data sections: alternatives the library chooses among and loads
  /// itself. Together they count as one module, which runs when any of them does.
  std::vector<FatbinContainer> embedded;

  /// Kernel modules: .nv_fatbin containers that are not device-link stubs, plus one for the
  /// embedded containers when there are any.
  size_t ModuleCount() const;
};

/// Parses every container of a fatbin section. `bytes` is the section contents, found at file
/// offset `file_offset` and virtual address `address` of `file` (used for error messages and
/// wrapper matching). Zero padding between containers (they are 8-aligned) is skipped.
Result<std::vector<FatbinContainer>> ParseFatbinSection(const ElfFile& file,
                                                        std::span<const uint8_t> bytes,
                                                        uint64_t file_offset, uint64_t address);

/// The containers of a data section (one of kEmbeddedFatbinSections), found by their magic at
/// 8-aligned file offsets. A candidate counts only when its header (version 1, header size 16,
/// payload inside the section) and every entry validate and the entries fill the payload; then
/// the search resumes after it, so nested or overlapping lookalikes never count. One linear pass
/// over the section (a memchr-speed search for the magic, each candidate parsed once and never
/// past the section); pages are released behind the search, so the resident set stays a few
/// pages whatever the section's size.
std::vector<FatbinContainer> FindEmbeddedContainers(const ElfFile& file, const ElfSection& section);

/// Reads .nv_fatbin, __nv_relfatbin and the embedded containers of the data sections of `file`,
/// and marks device-link stubs (using the .nvFatBinSegment wrappers, and kernel-free cubins).
/// A file without fatbin sections gives an empty FatbinFile.
Result<FatbinFile> ReadFatbinFile(const ElfFile& file);

/// Opens `path` and reads its kernel images (ElfFile::Open + ReadFatbinFile).
Result<FatbinFile> ReadFatbinFile(const std::string& path);

/// The bytes of `container` inside `file` (what cuModuleLoadData takes).
Result<std::span<const uint8_t>> ContainerBytes(const ElfFile& file,
                                                const FatbinContainer& container);

/// Largest ratio of a compressed entry's declared image size to its stored size that
/// ReadEntryImage believes. LZ4 cannot expand a block more than 255 times; real cubins and PTX
/// compress 3-20 times. A header claiming more is refused before anything is allocated, so
/// memory for an image stays within 256 x the bytes of the file that hold it.
inline constexpr uint64_t kMaxCompressionRatio = 256;

/// The image of `entry`, decompressed (zstd or LZ4) when needed. Refuses images whose declared
/// size exceeds `max_bytes` or kMaxCompressionRatio times the stored (compressed) size, before
/// allocating.
Result<std::string> ReadEntryImage(const ElfFile& file, const FatbinEntry& entry,
                                   uint64_t max_bytes = uint64_t{1} << 30);

/// Whether `entry` is a SASS cubin that defines no kernel (no .text.* section): what nvlink
/// emits when it has nothing to link. Only small images are read (at most kMaxStubImageBytes
/// decompressed); larger ones, unreadable ones and other kinds give false.
inline constexpr uint64_t kMaxStubImageBytes = 64 * 1024;
bool DefinesNoKernel(const ElfFile& file, const FatbinEntry& entry);

/// The `.target` of a PTX text ("sm_90a"), or an error when it has none.
Result<std::string> PtxTarget(std::string_view ptx);

}  // namespace hetrun::arch

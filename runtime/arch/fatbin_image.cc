// Reading the payload of a fatbin entry: decompression (zstd / LZ4 raw block) and the PTX target.
#include <fmt/format.h>
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <limits>

#include "arch/byte_reader.h"
#include "hetrun/arch/fatbin.h"

namespace hetrun::arch {

Result<std::string> ReadEntryImage(const ElfFile& file, const FatbinEntry& entry,
                                   uint64_t max_bytes) {
  const uint64_t payload = entry.offset + entry.header_size;
  const uint64_t stored = entry.StoredBytes();
  if (entry.header_size > std::numeric_limits<uint64_t>::max() - entry.offset ||
      !InBounds(file.bytes(), payload, stored)) {
    return file.ErrorAt(entry.offset, "fatbin entry payload runs past the end of the file");
  }
  const auto* source = reinterpret_cast<const char*>(file.bytes().data() + payload);
  if (entry.compression == Compression::kNone) return std::string(source, stored);

  const uint64_t size = entry.uncompressed_size;
  if (size == 0 || size > max_bytes) {
    return file.ErrorAt(entry.offset + 56,
                        fmt::format("uncompressed size {:#x} of a {} entry is not in (0, {:#x}]",
                                    size, CompressionName(entry.compression), max_bytes));
  }
  if (size / kMaxCompressionRatio > stored) {
    return file.ErrorAt(
        entry.offset + 56,
        fmt::format("uncompressed size {:#x} of a {} entry is more than {} times "
                    "its {:#x} stored bytes; refused as a lying header",
                    size, CompressionName(entry.compression), kMaxCompressionRatio, stored));
  }
  std::string image(size, '\0');
  if (entry.compression == Compression::kZstd) {
    const size_t n = ZSTD_decompress(image.data(), image.size(), source, stored);
    if (ZSTD_isError(n)) {
      return file.ErrorAt(payload, fmt::format("ZSTD_decompress: {}", ZSTD_getErrorName(n)));
    }
    if (n != size) {
      return file.ErrorAt(payload, fmt::format("ZSTD_decompress gave {:#x} bytes, header says "
                                               "{:#x}",
                                               n, size));
    }
    return image;
  }
  if (stored > static_cast<uint64_t>(std::numeric_limits<int>::max()) ||
      size > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return file.ErrorAt(payload, "LZ4 entry larger than 2 GiB");
  }
  const int n =
      LZ4_decompress_safe(source, image.data(), static_cast<int>(stored), static_cast<int>(size));
  if (n < 0) return file.ErrorAt(payload, "LZ4_decompress_safe: malformed LZ4 block");
  if (static_cast<uint64_t>(n) != size) {
    return file.ErrorAt(payload, fmt::format("LZ4_decompress_safe gave {:#x} bytes, header says "
                                             "{:#x}",
                                             n, size));
  }
  return image;
}

bool DefinesNoKernel(const ElfFile& file, const FatbinEntry& entry) {
  if (entry.kind != ImageKind::kSass || entry.ImageBytes() > kMaxStubImageBytes) return false;
  Result<std::string> image = ReadEntryImage(file, entry, kMaxStubImageBytes);
  if (!image.ok()) return false;
  const auto* data = reinterpret_cast<const uint8_t*>(image->data());
  Result<ElfFile> cubin =
      ElfFile::FromBytes(std::span<const uint8_t>(data, image->size()), file.path() + " (cubin)");
  if (!cubin.ok()) return false;
  return std::none_of(cubin->sections().begin(), cubin->sections().end(),
                      [](const ElfSection& s) { return s.name.starts_with(".text."); });
}

Result<std::string> PtxTarget(std::string_view ptx) {
  size_t pos = 0;
  while (pos < ptx.size()) {
    size_t eol = ptx.find('\n', pos);
    if (eol == std::string_view::npos) eol = ptx.size();
    std::string_view line = ptx.substr(pos, eol - pos);
    pos = eol + 1;
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) continue;
    line.remove_prefix(start);
    constexpr std::string_view kDirective = ".target";
    if (!line.starts_with(kDirective) || line.size() == kDirective.size() ||
        (line[kDirective.size()] != ' ' && line[kDirective.size()] != '\t')) {
      continue;
    }
    line.remove_prefix(kDirective.size());
    const size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string_view::npos) break;
    line.remove_prefix(begin);
    const size_t stop = line.find_first_of(" \t,\r");
    return std::string(line.substr(0, stop));
  }
  return InvalidArgumentError("PTX text has no .target directive");
}

}  // namespace hetrun::arch

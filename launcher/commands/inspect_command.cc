// `hetrun inspect [--json] [--ptx-target] FILE|DIR...`: the CUDA kernel images of ELF files,
// like `cuobjdump --list-elf --list-ptx`, without CUDA. Directories are scanned recursively.
#include <fmt/format.h>

#include <cxxopts.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <tuple>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/arch/image_check.h"
#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {
namespace {

using arch::Compression;
using arch::FatbinContainer;
using arch::FatbinEntry;
using arch::ImageKind;
using arch::ScannedFile;

// The `.target` of a PTX entry ("sm_90"), read by decompressing it; "" for other kinds.
std::string TargetOf(const arch::ElfFile* elf, const FatbinEntry& entry) {
  if (elf == nullptr || entry.kind != ImageKind::kPtx) return "";
  Result<std::string> image = arch::ReadEntryImage(*elf, entry);
  if (!image.ok()) return "error: " + image.status().message();
  Result<std::string> target = arch::PtxTarget(*image);
  return target.ok() ? *target : "none";
}

nlohmann::json EntryJson(const FatbinEntry& entry, size_t container, std::string_view section,
                         const arch::ElfFile* elf) {
  nlohmann::json json = {
      {"section", section},
      {"kind", arch::ImageKindName(entry.kind)},
      {"arch", entry.ArchName()},
      {"compressed", entry.compression != Compression::kNone},
      {"compression", arch::CompressionName(entry.compression)},
      {"bytes", entry.StoredBytes()},
      {"image_bytes", entry.ImageBytes()},
      {"container", container},
      {"offset", entry.offset},
      {"code_version", fmt::format("{}.{}", entry.code_major, entry.code_minor)},
  };
  if (elf != nullptr && entry.kind == ImageKind::kPtx) json["ptx_target"] = TargetOf(elf, entry);
  return json;
}

nlohmann::json FileJson(const ScannedFile& file, const arch::ElfFile* elf) {
  nlohmann::json json = {{"file", file.path}};
  if (file.error) {
    json["error"] = file.error->message();
    json["images"] = nlohmann::json::array();
    return json;
  }
  nlohmann::json images = nlohmann::json::array();
  nlohmann::json containers = nlohmann::json::array();
  // .nv_fatbin's containers, then those found in data sections: indexes run on across both.
  std::vector<const FatbinContainer*> list;
  for (const FatbinContainer& c : file.images.containers) list.push_back(&c);
  for (const FatbinContainer& c : file.images.embedded) list.push_back(&c);
  for (size_t c = 0; c < list.size(); ++c) {
    containers.push_back({{"index", c},
                          {"section", list[c]->section},
                          {"offset", list[c]->offset},
                          {"bytes", list[c]->size},
                          {"images", list[c]->entries.size()},
                          {"device_link_stub", list[c]->device_link_stub}});
    for (const FatbinEntry& entry : list[c]->entries) {
      images.push_back(EntryJson(entry, c, list[c]->section, elf));
    }
  }
  nlohmann::json relocatable = nlohmann::json::array();
  for (size_t c = 0; c < file.images.relocatable.size(); ++c) {
    for (const FatbinEntry& entry : file.images.relocatable[c].entries) {
      relocatable.push_back(EntryJson(entry, c, arch::kRelocatableFatbinSection, elf));
    }
  }
  json["images"] = std::move(images);
  json["containers"] = std::move(containers);
  json["modules"] = file.images.ModuleCount();
  json["relocatable_images"] = std::move(relocatable);
  return json;
}

std::string SizeText(const FatbinEntry& entry) {
  if (entry.compression == Compression::kNone) return std::to_string(entry.StoredBytes());
  return fmt::format("{} -> {}", entry.StoredBytes(), entry.ImageBytes());
}

void PrintContainers(std::ostream& out, std::string_view section,
                     const std::vector<FatbinContainer>& containers, const arch::ElfFile* elf) {
  for (size_t c = 0; c < containers.size(); ++c) {
    const FatbinContainer& container = containers[c];
    out << fmt::format(
        "  {} container {} at {:#x}, {} bytes{}\n", section, c, container.offset, container.size,
        container.device_link_stub ? " (device-link stub, not a kernel module)" : "");
    for (const FatbinEntry& entry : container.entries) {
      std::string target = TargetOf(elf, entry);
      out << fmt::format("    {:<6} {:<14} {:<5} {:>22}  at {:#x}{}\n",
                         arch::ImageKindName(entry.kind), entry.ArchName(),
                         arch::CompressionName(entry.compression), SizeText(entry), entry.offset,
                         target.empty() ? "" : "  .target " + target);
    }
  }
}

// The containers a library keeps in its data sections: often thousands of one-image containers
// (cuFFT: 23,983), so one line per section with the images counted by kind and arch.
void PrintEmbedded(std::ostream& out, const std::vector<FatbinContainer>& embedded) {
  using Image = std::tuple<ImageKind, uint32_t, std::string>;  // sorted by kind, then SM
  std::map<std::string, std::map<Image, size_t>> counts;       // section -> image -> count
  std::map<std::string, size_t> containers;
  for (const FatbinContainer& container : embedded) {
    ++containers[container.section];
    for (const FatbinEntry& entry : container.entries) {
      ++counts[container.section][Image{entry.kind, entry.sm, entry.ArchName()}];
    }
  }
  for (const auto& [section, images] : counts) {
    const size_t n = containers[section];
    out << fmt::format("  {}: {} container{} the library loads itself (one module):\n", section, n,
                       n == 1 ? "" : "s");
    for (const auto& [image, count] : images) {
      out << fmt::format("    {:<6} {:<14} x{}\n", arch::ImageKindName(std::get<0>(image)),
                         std::get<2>(image), count);
    }
  }
}

void PrintFile(std::ostream& out, const ScannedFile& file, const arch::ElfFile* elf) {
  if (file.error) {
    out << file.path << ": error: " << file.error->message() << "\n";
    return;
  }
  const arch::FatbinFile& images = file.images;
  if (images.containers.empty() && images.relocatable.empty() && images.embedded.empty()) {
    out << file.path << ": no CUDA kernel images\n";
    return;
  }
  const size_t stubs =
      images.containers.size() + (images.embedded.empty() ? 0 : 1) - images.ModuleCount();
  out << fmt::format(
      "{}: {} kernel module{}{}\n", file.path, images.ModuleCount(),
      images.ModuleCount() == 1 ? "" : "s",
      stubs == 0 ? "" : fmt::format(" (+{} device-link stub{})", stubs, stubs == 1 ? "" : "s"));
  PrintContainers(out, ".nv_fatbin", images.containers, elf);
  PrintEmbedded(out, images.embedded);
  if (!images.relocatable.empty()) {
    out << "  __nv_relfatbin (pre-link copies for -rdc; not loaded by the runtime):\n";
    PrintContainers(out, "__nv_relfatbin", images.relocatable, elf);
  }
}

}  // namespace

Result<int> commands::Inspect(const CommandContext& context) {
  cxxopts::Options options("hetrun inspect",
                           "List the CUDA kernel images (SASS cubins, PTX) in ELF executables and "
                           "shared objects, like cuobjdump --list-elf --list-ptx. Directories are "
                           "scanned recursively.");
  options.positional_help("FILE|DIR...");
  options.add_options()("json",
                        "print JSON: [{file, images: [{kind, arch, compressed, bytes}], error?}]")(
      "ptx-target", "decompress PTX images and show their .target")(
      "paths", "files or directories", cxxopts::value<std::vector<std::string>>())("h,help",
                                                                                   "this text");
  options.parse_positional({"paths"});
  HETRUN_ASSIGN_OR_RETURN(cxxopts::ParseResult parsed,
                          ParseSubcommandOptions(options, context.args));
  if (parsed.count("help")) {
    context.out << options.help();
    return kExitOk;
  }
  if (!parsed.count("paths")) return UsageError("hetrun inspect: name at least one FILE or DIR");
  const bool json = parsed.count("json") > 0;
  const bool ptx_target = parsed.count("ptx-target") > 0;

  std::vector<ScannedFile> files =
      arch::ScanKernelImages(parsed["paths"].as<std::vector<std::string>>());
  nlohmann::json array = nlohmann::json::array();
  const Status* first_error = nullptr;
  for (const ScannedFile& file : files) {
    std::optional<arch::ElfFile> elf;
    if (ptx_target && !file.error) {
      Result<arch::ElfFile> opened = arch::ElfFile::Open(file.path);
      if (opened.ok()) elf.emplace(std::move(opened).value());
    }
    const arch::ElfFile* elf_ptr = elf ? &*elf : nullptr;
    if (json) {
      array.push_back(FileJson(file, elf_ptr));
    } else {
      PrintFile(context.out, file, elf_ptr);
    }
    if (file.error && first_error == nullptr) first_error = &*file.error;
  }
  if (json) context.out << array.dump(2) << "\n";
  if (first_error != nullptr) return *first_error;
  return kExitOk;
}

}  // namespace hetrun::launcher

#include "hetrun/arch/arch_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace hetrun::arch {
namespace {

// Named architectures, combined names first (PyTorch substitutes them textually in this order).
constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kNamedArches = {{
    {"Kepler+Tesla", "3.7"},
    {"Kepler", "3.5+PTX"},
    {"Maxwell+Tegra", "5.3"},
    {"Maxwell", "5.0;5.2+PTX"},
    {"Pascal", "6.0;6.1+PTX"},
    {"Volta+Tegra", "7.2"},
    {"Volta", "7.0+PTX"},
    {"Turing", "7.5+PTX"},
    {"Ampere+Tegra", "8.7"},
    {"Ampere", "8.0;8.6+PTX"},
    {"Ada", "8.9+PTX"},
    {"Hopper", "9.0+PTX"},
    {"Blackwell+Tegra", "11.0"},
    {"Blackwell", "10.0;10.3;12.0;12.1+PTX"},
}};

// The architectures PyTorch's extension builder accepts (union of recent releases).
constexpr std::array<std::string_view, 29> kSupported = {
    "3.5",   "3.7",  "5.0",   "5.2",  "5.3",   "6.0",  "6.1",   "6.2",  "7.0",   "7.2",
    "7.5",   "8.0",  "8.6",   "8.7",  "8.9",   "9.0",  "9.0a",  "10.0", "10.0a", "10.1",
    "10.1a", "10.3", "10.3a", "11.0", "11.0a", "12.0", "12.0a", "12.1", "12.1a"};

std::string ExpandNames(std::string_view text) {
  std::string result(text);
  for (const auto& [name, value] : kNamedArches) {
    for (size_t at = result.find(name); at != std::string::npos;
         at = result.find(name, at + value.size())) {
      result.replace(at, name.size(), value);
    }
  }
  return result;
}

}  // namespace

std::string ArchListEntry::ToString() const {
  return fmt::format("{}{}{}", capability.ToString(), arch_specific ? "a" : "", ptx ? "+PTX" : "");
}

Result<ArchList> ParseTorchCudaArchList(std::string_view text) {
  ArchList list;
  list.text = std::string(text);
  std::string expanded = ExpandNames(text);
  std::replace_if(
      expanded.begin(), expanded.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n'; },
      ';');
  std::string_view rest = expanded;
  while (!rest.empty()) {
    const size_t end = rest.find(';');
    std::string_view item = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (item.empty()) continue;
    ArchListEntry entry;
    std::string_view arch = item;
    constexpr std::string_view kPtx = "+PTX";
    if (arch.ends_with(kPtx)) {
      entry.ptx = true;
      arch.remove_suffix(kPtx.size());
    }
    if (std::find(kSupported.begin(), kSupported.end(), arch) == kSupported.end()) {
      return InvalidArgumentError(fmt::format(
          "TORCH_CUDA_ARCH_LIST '{}': unknown CUDA arch '{}' (expected X.Y, X.Ya or a name such "
          "as Ampere or Hopper, each optionally with +PTX)",
          text, item));
    }
    if (arch.ends_with('a')) {
      entry.arch_specific = true;
      arch.remove_suffix(1);
    }
    Result<ComputeCapability> cc = ParseComputeCapability(arch);
    if (!cc.ok()) {
      return InvalidArgumentError(
          fmt::format("TORCH_CUDA_ARCH_LIST '{}': unknown CUDA arch '{}'", text, item));
    }
    entry.capability = *cc;
    auto same = std::find_if(list.entries.begin(), list.entries.end(), [&](const ArchListEntry& e) {
      return e.capability == entry.capability && e.arch_specific == entry.arch_specific;
    });
    if (same != list.entries.end()) {
      same->ptx = same->ptx || entry.ptx;
    } else {
      list.entries.push_back(entry);
    }
  }
  if (list.entries.empty()) {
    return InvalidArgumentError(
        fmt::format("TORCH_CUDA_ARCH_LIST '{}' names no architecture", text));
  }
  return list;
}

ArchListCoverage CoverageOf(const ArchList& list, ComputeCapability target) {
  ArchListCoverage coverage;
  for (const ArchListEntry& entry : list.entries) {
    FatbinEntry sass;
    sass.kind = ImageKind::kSass;
    sass.sm = static_cast<uint32_t>(entry.capability.sm());
    sass.arch_specific = entry.arch_specific;
    if (FitOf(sass, target) == ImageFit::kSass) {
      coverage.fit = ImageFit::kSass;
      coverage.via = entry.ToString();
      return coverage;
    }
    if (entry.ptx && coverage.fit == ImageFit::kNone) {
      FatbinEntry ptx = sass;
      ptx.kind = ImageKind::kPtx;
      if (FitOf(ptx, target) == ImageFit::kPtxJit) {
        coverage.fit = ImageFit::kPtxJit;
        coverage.via = entry.ToString();
      }
    }
  }
  return coverage;
}

}  // namespace hetrun::arch

#include "hetrun/arch/compat.h"

#include <fmt/format.h>

#include <algorithm>

#include "hetrun/base/units.h"

namespace hetrun::arch {
namespace {

// SASS-style rule on SM numbers: same major, minor at least the image's.
bool SameMajorNotOlder(uint32_t image_sm, int target_sm) {
  return static_cast<int>(image_sm / 10) == target_sm / 10 &&
         static_cast<int>(image_sm % 10) <= target_sm % 10;
}

}  // namespace

std::string ComputeCapability::ToString() const {
  return fmt::format("{}.{}", major, minor);
}

Result<ComputeCapability> ParseComputeCapability(std::string_view text) {
  std::string_view body = text;
  if (body.starts_with("sm_")) body.remove_prefix(3);
  const size_t dot = body.find('.');
  Result<int64_t> major = InvalidArgumentError("");
  Result<int64_t> minor = InvalidArgumentError("");
  if (dot != std::string_view::npos) {
    major = ParseIntInRange(body.substr(0, dot), 1, 99);
    minor = ParseIntInRange(body.substr(dot + 1), 0, 9);
  } else if (body.size() >= 2) {
    major = ParseIntInRange(body.substr(0, body.size() - 1), 1, 99);
    minor = ParseIntInRange(body.substr(body.size() - 1), 0, 9);
  }
  if (!major.ok() || !minor.ok()) {
    return InvalidArgumentError(fmt::format(
        "invalid compute capability '{}' (expected MAJOR.MINOR such as 8.0 or 9.0)", text));
  }
  return ComputeCapability{static_cast<int>(*major), static_cast<int>(*minor)};
}

Result<std::vector<ComputeCapability>> ParseComputeCapabilityList(std::string_view text) {
  std::vector<ComputeCapability> result;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of(", ;", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    HETRUN_ASSIGN_OR_RETURN(ComputeCapability cc, ParseComputeCapability(item));
    if (std::find(result.begin(), result.end(), cc) == result.end()) result.push_back(cc);
  }
  if (result.empty()) {
    return InvalidArgumentError(fmt::format("no compute capability in '{}'", text));
  }
  return result;
}

ImageFit FitOf(const FatbinEntry& entry, ComputeCapability target) {
  const int sm = target.sm();
  bool runs = false;
  if (entry.arch_specific) {
    runs = static_cast<int>(entry.sm) == sm;
  } else if (entry.family || entry.kind == ImageKind::kSass) {
    runs = SameMajorNotOlder(entry.sm, sm);
  } else {
    runs = static_cast<int>(entry.sm) <= sm;
  }
  if (!runs) return ImageFit::kNone;
  switch (entry.kind) {
    case ImageKind::kSass:
      return ImageFit::kSass;
    case ImageKind::kPtx:
      return ImageFit::kPtxJit;
    default:
      return ImageFit::kNone;
  }
}

ImageFit FitOf(const FatbinContainer& container, ComputeCapability target) {
  ImageFit best = ImageFit::kNone;
  for (const FatbinEntry& entry : container.entries) {
    const ImageFit fit = FitOf(entry, target);
    if (fit == ImageFit::kSass) return fit;
    if (fit == ImageFit::kPtxJit) best = fit;
  }
  return best;
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kSass:
      return "sass";
    case Verdict::kPtxJit:
      return "ptx-jit";
    case Verdict::kPartial:
      return "partial";
    case Verdict::kMissing:
      return "missing";
    case Verdict::kNone:
      return "none";
  }
  return "none";
}

FileVerdict VerdictFor(const FatbinFile& file, ComputeCapability target) {
  FileVerdict result;
  std::vector<ImageFit> fits;
  for (const FatbinContainer& container : file.containers) {
    if (!container.device_link_stub) fits.push_back(FitOf(container, target));
  }
  // The embedded containers are one module: the library loads whichever of them fits.
  if (!file.embedded.empty()) {
    ImageFit best = ImageFit::kNone;
    for (const FatbinContainer& container : file.embedded) {
      const ImageFit fit = FitOf(container, target);
      if (fit == ImageFit::kSass || (fit == ImageFit::kPtxJit && best == ImageFit::kNone)) {
        best = fit;
      }
    }
    fits.push_back(best);
  }
  for (const ImageFit fit : fits) {
    ++result.modules;
    switch (fit) {
      case ImageFit::kSass:
        ++result.sass;
        break;
      case ImageFit::kPtxJit:
        ++result.ptx_jit;
        break;
      case ImageFit::kNone:
        ++result.missing;
        break;
    }
  }
  if (result.modules == 0) {
    result.verdict = Verdict::kNone;
  } else if (result.missing == result.modules) {
    result.verdict = Verdict::kMissing;
  } else if (result.missing > 0) {
    result.verdict = Verdict::kPartial;
  } else if (result.ptx_jit > 0) {
    result.verdict = Verdict::kPtxJit;
  } else {
    result.verdict = Verdict::kSass;
  }
  return result;
}

bool VerdictFails(Verdict verdict, bool strict) {
  return verdict == Verdict::kMissing || (strict && verdict == Verdict::kPartial);
}

}  // namespace hetrun::arch

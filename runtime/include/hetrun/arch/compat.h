// Can a GPU of compute capability X.Y run the kernels of a file? Offline verdicts from the fatbin
// headers (shared/reference/cuda_facts.md §1):
//   SASS sm_XY   runs on the same major with minor >= Y;
//   SASS sm_XYa  runs on exactly X.Y;  sm_XYf on the same major with minor >= Y;
//   PTX compute_XY JIT-compiles on any CC >= X.Y (compute_XYa: exactly X.Y; compute_XYf: same
//   major, minor >= Y) — slower first start, no arch-specific instructions.
// A container (module) runs when one of its images does; device-link stubs are skipped. The
// containers a library keeps in its data sections (FatbinFile::embedded) are one module that
// runs when any of them does: the library picks the one for the GPU. __nv_relfatbin copies never
// count.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hetrun/arch/fatbin.h"
#include "hetrun/base/status.h"

namespace hetrun::arch {

struct ComputeCapability {
  int major = 0;
  int minor = 0;

  int sm() const { return major * 10 + minor; }
  /// "8.0"
  std::string ToString() const;
  friend bool operator==(const ComputeCapability&, const ComputeCapability&) = default;
  friend auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

/// "8.0", "9.0", "10.0", "12.1" (also "sm_90" / "90"). Errors name the text.
Result<ComputeCapability> ParseComputeCapability(std::string_view text);

/// A comma (or space) list of capabilities: "8.0,9.0". Duplicates are dropped, order kept.
Result<std::vector<ComputeCapability>> ParseComputeCapabilityList(std::string_view text);

/// How a GPU runs an image or a module.
enum class ImageFit { kNone, kSass, kPtxJit };

/// Whether `entry` runs on `target`, and how. LTO-IR and unknown kinds never run directly.
ImageFit FitOf(const FatbinEntry& entry, ComputeCapability target);

/// The best way a module (container) runs on `target`: SASS beats PTX JIT beats nothing.
ImageFit FitOf(const FatbinContainer& container, ComputeCapability target);

/// Per-file verdict for one target.
enum class Verdict {
  kSass,     ///< every kernel module has SASS for the target
  kPtxJit,   ///< every module runs, some only through PTX JIT
  kPartial,  ///< some modules run, some do not (normal for vendor libraries)
  kMissing,  ///< no module runs: "no kernel image is available for execution on the device"
  kNone,     ///< the file has no kernel modules
};

/// "sass", "ptx-jit", "partial", "missing", "none".
std::string_view VerdictName(Verdict verdict);

struct FileVerdict {
  Verdict verdict = Verdict::kNone;
  int modules = 0;  ///< containers that are kernel modules
  int sass = 0;     ///< modules with SASS for the target
  int ptx_jit = 0;  ///< modules that run only through PTX JIT
  int missing = 0;  ///< modules with nothing for the target
};

FileVerdict VerdictFor(const FatbinFile& file, ComputeCapability target);

/// Whether a verdict fails a check: `missing` always, `partial` only when strict.
bool VerdictFails(Verdict verdict, bool strict);

}  // namespace hetrun::arch

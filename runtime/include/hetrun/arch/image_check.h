// The kernel-image preflight: which files of an image carry CUDA kernels, and whether every
// target GPU can run them. Used by `hetrun inspect`, `hetrun check` and (per GPU family of the
// job) by `hetrun run`. Offline: no CUDA, no GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetrun/arch/arch_list.h"
#include "hetrun/arch/compat.h"
#include "hetrun/arch/fatbin.h"
#include "hetrun/base/status.h"

namespace hetrun::arch {

/// One file found by a scan: its kernel images, or why they could not be read.
struct ScannedFile {
  std::string path;
  std::optional<Status> error;  ///< set when the file is unreadable or corrupt
  FatbinFile images;
};

/// Expands FILE and DIR arguments in order. A file named directly must be a readable ELF file
/// (anything else is an error entry). Directories are walked recursively without following
/// directory symlinks: regular ELF files are read, non-ELF files skipped quietly, unreadable
/// ones reported as error entries. A file reached twice (symlinks, hard links) is listed once.
std::vector<ScannedFile> ScanKernelImages(const std::vector<std::string>& paths);

struct FileCheck {
  std::string path;
  std::optional<Status> error;
  size_t modules = 0;                 ///< kernel modules (containers that are not stubs)
  std::vector<FileVerdict> verdicts;  ///< one per target, same order as ArchCheckReport::targets
};

struct ArchCheckReport {
  std::vector<ComputeCapability> targets;
  bool strict = false;
  std::optional<ArchList> arch_list;
  std::vector<ArchListCoverage> arch_list_coverage;  ///< one per target when arch_list is set
  std::vector<FileCheck> files;

  /// Ok; ArchMismatch (exit 80) when a file is `missing` for a target (or `partial` when
  /// strict) or the arch list covers no image for a target; InvalidArgument (exit 78) when a
  /// file could not be read and nothing mismatched.
  Status Outcome() const;
};

/// Verdicts of every scanned file for every target.
ArchCheckReport CheckKernelImages(const std::vector<ScannedFile>& files,
                                  const std::vector<ComputeCapability>& targets, bool strict,
                                  const std::optional<ArchList>& arch_list);

}  // namespace hetrun::arch

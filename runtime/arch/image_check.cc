#include "hetrun/arch/image_check.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

namespace hetrun::arch {
namespace {

namespace fs = std::filesystem;

// Reads the first 4 bytes: is it worth mapping?
Result<bool> StartsWithElfMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("open", path, errno);
  uint8_t magic[4] = {};
  in.read(reinterpret_cast<char*>(magic), sizeof(magic));
  return in.gcount() == 4 && HasElfMagic(std::span<const uint8_t>(magic, 4));
}

ScannedFile ScanOne(const std::string& path) {
  ScannedFile scanned;
  scanned.path = path;
  Result<FatbinFile> images = ReadFatbinFile(path);
  if (images.ok()) {
    scanned.images = std::move(images).value();
  } else {
    scanned.error = images.status();
  }
  return scanned;
}

class Scanner {
 public:
  void AddFile(const std::string& path, bool named) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) {
      Report(path, ErrnoError("stat", path, errno));
      return;
    }
    if (!S_ISREG(info.st_mode)) {
      // A FIFO would block the scan, a device such as /dev/zero never end: only regular files.
      if (named) Report(path, InvalidArgumentError(path + ": not a regular file"));
      return;
    }
    if (!seen_.insert({info.st_dev, info.st_ino}).second) return;
    if (!named) {
      Result<bool> elf = StartsWithElfMagic(path);
      if (!elf.ok()) {
        Report(path, elf.status());
        return;
      }
      if (!*elf) return;
    }
    files_.push_back(ScanOne(path));
  }

  void AddDirectory(const std::string& root) {
    std::error_code error;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, error);
    if (error) {
      Report(root, InvalidArgumentError(
                       fmt::format("cannot read directory {}: {}", root, error.message())));
      return;
    }
    std::vector<std::string> found;
    for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (error) break;
      std::error_code status_error;
      const fs::file_status status = it->status(status_error);  // follows file symlinks
      if (status_error || !fs::is_regular_file(status)) continue;
      found.push_back(it->path().string());
    }
    if (error) {
      Report(root, InvalidArgumentError(fmt::format("cannot finish reading directory {}: {}", root,
                                                    error.message())));
    }
    std::sort(found.begin(), found.end());  // stable output, whatever the directory order
    for (const std::string& path : found) AddFile(path, /*named=*/false);
  }

  void Add(const std::string& path) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error) {
      Report(path, ErrnoError("stat", path, error.value()));
    } else if (fs::is_directory(status)) {
      AddDirectory(path);
    } else {
      AddFile(path, /*named=*/true);
    }
  }

  std::vector<ScannedFile> Take() { return std::move(files_); }

 private:
  void Report(const std::string& path, Status status) {
    ScannedFile scanned;
    scanned.path = path;
    scanned.error = std::move(status);
    files_.push_back(std::move(scanned));
  }

  std::set<std::pair<dev_t, ino_t>> seen_;
  std::vector<ScannedFile> files_;
};

}  // namespace

std::vector<ScannedFile> ScanKernelImages(const std::vector<std::string>& paths) {
  Scanner scanner;
  for (const std::string& path : paths) scanner.Add(path);
  return scanner.Take();
}

ArchCheckReport CheckKernelImages(const std::vector<ScannedFile>& files,
                                  const std::vector<ComputeCapability>& targets, bool strict,
                                  const std::optional<ArchList>& arch_list) {
  ArchCheckReport report;
  report.targets = targets;
  report.strict = strict;
  report.arch_list = arch_list;
  if (arch_list) {
    for (const ComputeCapability& target : targets) {
      report.arch_list_coverage.push_back(CoverageOf(*arch_list, target));
    }
  }
  for (const ScannedFile& scanned : files) {
    FileCheck check;
    check.path = scanned.path;
    check.error = scanned.error;
    if (!scanned.error) {
      check.modules = scanned.images.ModuleCount();
      for (const ComputeCapability& target : targets) {
        check.verdicts.push_back(VerdictFor(scanned.images, target));
      }
    }
    report.files.push_back(std::move(check));
  }
  return report;
}

Status ArchCheckReport::Outcome() const {
  std::vector<std::string> mismatches;
  for (size_t t = 0; t < arch_list_coverage.size(); ++t) {
    if (arch_list_coverage[t].fit == ImageFit::kNone) {
      mismatches.push_back(fmt::format("TORCH_CUDA_ARCH_LIST '{}' has no image for {}",
                                       arch_list->text, targets[t].ToString()));
    }
  }
  size_t errors = 0;
  std::string first_error;
  for (const FileCheck& file : files) {
    if (file.error) {
      if (errors++ == 0) first_error = file.error->message();
      continue;
    }
    for (size_t t = 0; t < file.verdicts.size(); ++t) {
      if (VerdictFails(file.verdicts[t].verdict, strict)) {
        mismatches.push_back(fmt::format("{} is {} for {}", file.path,
                                         VerdictName(file.verdicts[t].verdict),
                                         targets[t].ToString()));
      }
    }
  }
  if (!mismatches.empty()) {
    std::string message =
        fmt::format("kernel images do not cover the target GPUs: {}", mismatches.front());
    if (mismatches.size() > 1) message += fmt::format(" (and {} more)", mismatches.size() - 1);
    return ArchMismatchError(message);
  }
  if (errors > 0) {
    std::string message = first_error;
    if (errors > 1) message += fmt::format(" (and {} more unreadable files)", errors - 1);
    return InvalidArgumentError(message);
  }
  return Status::Ok();
}

}  // namespace hetrun::arch

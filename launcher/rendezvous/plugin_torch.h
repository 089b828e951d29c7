// Which torch libhetrun_rendezvous.so needs, checked before anything is loaded
// (docs/ARCHITECTURE.md §2.4). The plugin links libtorch's C++ API (c10d::TCPStore), which
// changes between torch releases, so it runs only with the torch release it was built against.
// Beside it, libhetrun_rendezvous.torch records that torch:
//
//   torch_version=2.11.0+cu130
//   torch_dir=../torch
//
// torch_dir is the torch package folder (the one holding version.py and lib/): relative to the
// plugin's folder (the wheel: site-packages/hetrun/../torch) or absolute (a CMake build: the
// torch it was configured with). The launcher reads the installed torch's version from its
// version.py (no Python, no libtorch), then loads that torch's libtorch_cpu.so itself, so the
// library it checked is the library the plugin binds to.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

inline constexpr const char* kPluginTorchRecordName = "libhetrun_rendezvous.torch";

struct PluginTorchRecord {
  std::string version;  ///< torch.__version__ at build time, e.g. "2.11.0+cu130"
  std::string dir;      ///< the torch package folder: absolute, or relative to the plugin's
};

/// Parses the record's `key=value` lines ('#' comments and blank lines skipped). kInvalidArgument
/// naming `path` when torch_version or torch_dir is missing or a line is not key=value.
Result<PluginTorchRecord> ParsePluginTorchRecord(std::string_view text, std::string_view path);

/// torch's `__version__` from <torch_dir>/version.py. kNotFound when the file is absent,
/// kInvalidArgument naming the file when it holds no `__version__ = '...'` line.
Result<std::string> TorchPackageVersion(const std::filesystem::path& torch_dir);

/// Whether a library built for torch `built` may run with torch `installed`: the same release
/// (the version before any "+local" part: 2.11.0+cu130 and 2.11.0+cpu are one release).
bool SameTorchRelease(std::string_view built, std::string_view installed);

/// Where the interpreter finds the torch package (torch_location.h), for a record whose folder
/// holds none (torch reached through a .pth file or system site-packages).
using TorchDirLookup = std::function<Result<std::filesystem::path>()>;

/// Reads the record beside `plugin`, finds the torch package (the record's folder, else
/// `lookup`) and checks its version. Returns that torch's lib/ folder. kFailedPrecondition
/// (exit 78) naming the plugin and both versions when the installed release differs, naming the
/// recorded version and where it looked when no torch is installed, and when the record is
/// missing or unreadable.
Result<std::filesystem::path> CheckPluginTorch(const std::filesystem::path& plugin,
                                               const TorchDirLookup& lookup);

}  // namespace hetrun::launcher

#include "preflight/default_python.h"

#include <limits.h>
#include <unistd.h>

#include <optional>

namespace hetrun::launcher {
namespace {

bool IsExecutableFile(const std::filesystem::path& path) {
  std::error_code error;
  return !path.empty() && std::filesystem::is_regular_file(path, error) &&
         ::access(path.c_str(), X_OK) == 0;
}

bool SameFolder(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  return !a.empty() && !b.empty() && std::filesystem::equivalent(a, b, error);
}

}  // namespace

bool IsWheelLauncher() {
#ifdef HETRUN_WHEEL_LAUNCHER
  return true;
#else
  return false;
#endif
}

BuildTree ThisBuildTree() {
#if defined(HETRUN_BUILD_BIN_DIR) && defined(HETRUN_BUILD_PYTHON)
  return {HETRUN_BUILD_BIN_DIR, HETRUN_BUILD_PYTHON};
#else
  return {};
#endif
}

std::string DefaultPythonFor(const std::filesystem::path& launcher, bool wheel_launcher,
                             const BuildTree& build) {
  if (launcher.empty()) return "python3";
  if (wheel_launcher) {
    const std::filesystem::path beside = launcher.parent_path() / "python";
    // Not resolved: a venv's python is a symlink that must stay one.
    if (IsExecutableFile(beside)) return beside.string();
    return "python3";
  }
  if (SameFolder(launcher.parent_path(), build.bin_dir) && IsExecutableFile(build.python)) {
    return build.python.string();
  }
  return "python3";
}

std::string DefaultPython() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "python3";
  self[n] = '\0';
  return DefaultPythonFor(self, IsWheelLauncher(), ThisBuildTree());
}

std::string PythonOrDefault(const std::optional<std::string>& value) {
  return value && !value->empty() ? *value : DefaultPython();
}

}  // namespace hetrun::launcher

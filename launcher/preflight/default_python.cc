#include "preflight/default_python.h"

#include <limits.h>
#include <unistd.h>

#include <optional>

namespace hetrun::launcher {

bool IsWheelLauncher() {
#ifdef HETRUN_WHEEL_LAUNCHER
  return true;
#else
  return false;
#endif
}

std::string DefaultPythonFor(const std::filesystem::path& launcher, bool wheel_launcher) {
  if (wheel_launcher && !launcher.empty()) {
    const std::filesystem::path beside = launcher.parent_path() / "python";
    std::error_code error;
    if (std::filesystem::is_regular_file(beside, error) && ::access(beside.c_str(), X_OK) == 0) {
      return beside.string();  // not resolved: a venv's python is a symlink that must stay one
    }
  }
  return "python3";
}

std::string DefaultPython() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "python3";
  self[n] = '\0';
  return DefaultPythonFor(self, IsWheelLauncher());
}

std::string PythonOrDefault(const std::optional<std::string>& value) {
  return value && !value->empty() ? *value : DefaultPython();
}

}  // namespace hetrun::launcher

// The interpreter hetrun starts when neither --python nor HETRUN_PYTHON names one: for the
// workers of `hetrun run train.py` / `-m module`, and for finding the installed torch (`hetrun
// check --torch`, the rendezvous plugin's torch). docs/ARCHITECTURE.md §2.5.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace hetrun::launcher {

/// Whether this binary is the launcher of the Python wheel (installed by pip into an
/// environment's bin/, beside its python) rather than a CMake build or install.
bool IsWheelLauncher();

/// The rule on a given launcher path: the wheel's launcher uses the python beside it (bin/python
/// of the environment pip installed it into, as torchrun's script uses sys.executable), when that
/// is an executable file; otherwise, and always for the CMake-built launcher, "python3" (searched
/// in PATH when started).
std::string DefaultPythonFor(const std::filesystem::path& launcher, bool wheel_launcher);

/// DefaultPythonFor(this process's executable, IsWheelLauncher()).
std::string DefaultPython();

/// --python / HETRUN_PYTHON given as `value`, else DefaultPython().
std::string PythonOrDefault(const std::optional<std::string>& value);

}  // namespace hetrun::launcher

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

/// Where a CMake build puts its launcher and the Python it was configured with (the HETRUN_PYTHON
/// cache variable, normally the clone's .venv/bin/python from scripts/setup); empty for the wheel.
struct BuildTree {
  std::filesystem::path bin_dir;
  std::filesystem::path python;
};

/// This binary's build tree (compiled in; empty paths for the wheel's launcher).
BuildTree ThisBuildTree();

/// The rule on a given launcher path:
///   - the wheel's launcher uses the python beside it (bin/python of the environment pip installed
///     it into, as torchrun's script uses sys.executable), when that is an executable file;
///   - a launcher that runs from its build tree (`build/bin/hetrun`) uses the Python the build was
///     configured with, when that is an executable file: the one whose torch it was built against;
///   - otherwise (an installed copy, `make install`, an image) "python3", searched in PATH.
std::string DefaultPythonFor(const std::filesystem::path& launcher, bool wheel_launcher,
                             const BuildTree& build = {});

/// DefaultPythonFor(this process's executable, IsWheelLauncher(), ThisBuildTree()).
std::string DefaultPython();

/// --python / HETRUN_PYTHON given as `value`, else DefaultPython().
std::string PythonOrDefault(const std::optional<std::string>& value);

}  // namespace hetrun::launcher

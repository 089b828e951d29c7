// Where the installed torch package keeps its shared libraries (libtorch_cuda.so and siblings).
#pragma once

#include <chrono>
#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// The torch package folder (holding version.py and lib/) as `python` finds it: importlib's
/// find_spec, which locates torch without importing it (milliseconds, not seconds).
/// kFailedPrecondition when python cannot run or has no torch; kDeadlineExceeded after `timeout`.
Result<std::string> FindTorchPackageDir(
    const std::string& python, std::chrono::milliseconds timeout = std::chrono::seconds(120));

/// FindTorchPackageDir with the python named by HETRUN_PYTHON (default:
/// preflight/default_python.h), plus "/lib"; kFailedPrecondition when that is not a folder.
Result<std::string> FindTorchLibDir(const Environment& env,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(120));

}  // namespace hetrun::launcher

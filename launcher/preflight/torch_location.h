// Where the installed torch package keeps its shared libraries (libtorch_cuda.so and siblings).
#pragma once

#include <chrono>
#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// Runs `python -c "import torch, os; print(os.path.dirname(torch.__file__))"` with the python
/// named by HETRUN_PYTHON (default python3, searched in PATH) and returns "<dir>/lib".
/// kFailedPrecondition when python or torch is missing; kDeadlineExceeded after `timeout`.
Result<std::string> FindTorchLibDir(const Environment& env,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(120));

}  // namespace hetrun::launcher

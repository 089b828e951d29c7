// The workers' program, checked before anything of `hetrun run` starts (docs/ARCHITECTURE.md
// §2.1): a command that is not found, a program path that is not an executable file, the Python
// interpreter of `hetrun run train.py` / `-m module` missing from PATH, or a worker script that
// does not exist is refused before the preflight and any worker, with the exit code a failed
// exec would give (127 not found, 126 not executable; exit_codes.def), instead of every worker
// failing alike later. `--dry-run` only warns (its paths may be those of the pod it previews).
#pragma once

#include <string>
#include <vector>

#include "commands/torchrun_args.h"
#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// OK when `command` (the workers' argv, started as `kind` says) can start with PATH of `env`
/// from the folder hetrun runs in. A Python worker's script: the program of `hetrun run
/// train.py`, or a `.py` argument right after an interpreter named python* (`-- python
/// train.py`). Errors: kNotFound (127), kFailedPrecondition (126).
Status CheckWorkerCommand(const std::vector<std::string>& command, ProgramKind kind,
                          const Environment& env);

/// The exit code for an error of CheckWorkerCommand, after logging it and writing the
/// termination log: what a failed exec of the workers reports.
int RefuseWorkerCommand(const Status& status, const Environment& env);

}  // namespace hetrun::launcher

// The exit-code contract (ARCHITECTURE.md §4.3): Volcano policies key on these numbers.
#pragma once

#include "hetrun/base/status.h"

namespace hetrun::launcher {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;           ///< bad flags: TerminateJob
inline constexpr int kExitInternal = 70;        ///< a bug in hetrun or a failed system call
inline constexpr int kExitTransient = 75;       ///< peer lost, timeout, hang: RestartJob
inline constexpr int kExitConfig = 78;          ///< bad environment or file: TerminateJob
inline constexpr int kExitArchMismatch = 80;    ///< kernel images vs GPUs: TerminateJob
inline constexpr int kExitMemory = 81;          ///< ceiling does not fit, GPU OOM: AbortJob
inline constexpr int kExitNotExecutable = 126;  ///< worker command not executable
inline constexpr int kExitNotFound = 127;       ///< worker command not found

/// The exit code for a hetrun error.
int ExitCodeFor(const Status& status);

/// The exit code for a wait(2) status: the code itself, or 128 + signal number.
int ExitCodeForWaitStatus(int wait_status);

}  // namespace hetrun::launcher

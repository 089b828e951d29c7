// Hang detection: the worker side of the heartbeat protocol between `hetrun run --hang-timeout`
// and its workers.
//
// Protocol (stable; any language can implement it in one line):
//   * When hang detection is on, hetrun creates one empty regular file per worker and passes its
//     absolute path in HETRUN_HEARTBEAT. When it is off, HETRUN_HEARTBEAT is not set.
//   * A beat is an update of that file's modification time to "now": `touch "$HETRUN_HEARTBEAT"`
//     in a shell, `os.utime(os.environ["HETRUN_HEARTBEAT"])` in Python, Beat() in C++.
//     The content is never read; a worker must not delete or replace the file.
//   * Workers beat once per training step (the runtime library's step timer does it). The
//     timeout must cover the slowest step plus checkpointing and start-up: the clock starts when
//     hetrun spawns the worker (the file is created then), not at the first beat.
//   * hetrun compares the file's mtime with the wall clock about every min(1 s, timeout / 4).
//     A worker whose last beat is older than --hang-timeout is reported ("rank 3: no heartbeat
//     for 62 s"), its group and every other worker group get SIGTERM (and SIGCONT, so a stopped
//     worker can act on it), SIGKILL at the grace deadline, and hetrun exits 75.
#pragma once

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

/// Beats once: sets the mtime of the file named by HETRUN_HEARTBEAT to now. OK and a no-op
/// when HETRUN_HEARTBEAT is unset or empty (not running under hang detection). An error names
/// the path when the file cannot be touched (it never creates the file).
Status Beat(const Environment& env);

}  // namespace hetrun

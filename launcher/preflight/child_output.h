// Collecting what a short-lived helper child (GPU probe, driver-load check, python lookup)
// writes to a pipe, with a deadline, so a hung driver or interpreter never hangs hetrun.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

struct ChildOutput {
  std::string text;  ///< everything read before EOF or the deadline
  bool timed_out = false;
  int wait_status = 0;  ///< from waitpid
};

/// Reads `fd` until EOF or `timeout`, then closes it; on timeout SIGKILLs `pid`. Always reaps
/// `pid`. An error only when waitpid itself fails; `what` names the child in messages.
Result<ChildOutput> CollectChildOutput(int fd, pid_t pid, std::chrono::milliseconds timeout,
                                       std::string_view what);

/// In a forked child: writes all of `text` to `fd` and _exits 0 (3 when the write fails).
[[noreturn]] void WriteAllAndExit(int fd, std::string_view text);

/// Runs `produce` in a forked child (so a hung or crashing driver call cannot take hetrun with it)
/// and returns the text it produced. Errors name `what`: a failed pipe2 or fork; "WHAT did not
/// finish in N s" + `timeout_hint` (deadline exceeded; the child is killed); "WHAT child failed
/// (wait status N)" (internal) when the child does not exit 0.
Result<std::string> OutputOfForkedChild(std::string_view what, std::chrono::milliseconds timeout,
                                        const std::function<std::string()>& produce,
                                        std::string_view timeout_hint = {});

}  // namespace hetrun::launcher

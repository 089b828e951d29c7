// The exit-code contract (docs/ARCHITECTURE.md §4.3): Volcano policies key on these numbers.
// Every code, range and event is one row of runtime/base/exit_codes.def; the constants, the
// `hetrun --help` section, `hetrun exit-codes` and the emitted Volcano policies all come from it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun {

#define HETRUN_EXIT_CODE(constant, code, meaning, action) inline constexpr int constant = code;
#define HETRUN_EXIT_RANGE(codes, meaning, action)
#define HETRUN_EXIT_EVENT(event, meaning, action)
#include "hetrun/base/exit_codes.def"
#undef HETRUN_EXIT_CODE
#undef HETRUN_EXIT_RANGE
#undef HETRUN_EXIT_EVENT

/// One row of the table.
struct ExitCodeRow {
  enum class Kind { kCode, kRange, kEvent };
  Kind kind;
  std::string_view cell;      ///< the first column as the docs write it: "64", "1-63", "PodFailed"
  int code;                   ///< the code for kCode rows, else -1
  std::string_view constant;  ///< "kExitUsage" for kCode rows, else ""
  std::string_view meaning;
  std::string_view action;  ///< the suggested Volcano action

  /// True when the emitted Volcano jobs carry a policy for this row.
  bool IsPolicy() const;
};

/// Every row, in table order.
std::span<const ExitCodeRow> ExitCodeTable();

/// One entry of a Volcano job's `policies`: an exit code (event empty) or an event (code -1).
struct VolcanoPolicy {
  int exit_code = -1;
  std::string_view event;
  std::string_view action;
  std::string_view meaning;  ///< written as a comment beside it
};

/// The policies every emitted job carries: exit codes in table order, then events; the
/// PodFailed catch-all last.
std::vector<VolcanoPolicy> VolcanoPolicies();

/// The table as the docs write it (`hetrun exit-codes --markdown`), as the plain text of
/// `hetrun --help`, and as one JSON object {"exit_codes": [...], "policies": [...]}.
std::string ExitCodeMarkdown();
std::string ExitCodeText();
std::string ExitCodeJson();

/// True for the codes hetrun gives its own verdicts (usage, internal, configuration, arch
/// mismatch, memory, fail-slow, collective check); a worker exiting with one of them is reported as
/// kExitWorkerReservedCode (1, as torchrun reports a failed worker). 75 is not among them: a
/// worker's own 75 keeps its meaning (transient, restartable).
constexpr bool IsReservedExitCode(int code) {
  return code == kExitUsage || code == kExitInternal || code == kExitConfig ||
         code == kExitArchMismatch || code == kExitMemory || code == kExitFailSlow ||
         code == kExitCollectiveWrong;
}

/// The exit code for a hetrun error.
int ExitCodeFor(const Status& status);

/// The exit code for a wait(2) status: the code itself, or 128 + signal number.
int ExitCodeForWaitStatus(int wait_status);

}  // namespace hetrun

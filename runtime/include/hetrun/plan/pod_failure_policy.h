// hetrun's exit-code table (hetrun/base/exit_code.h) as a Kubernetes Job's podFailurePolicy, for
// the Jobs of an emitted JobSet (docs/ARCHITECTURE.md §4.3). JobSet's own failurePolicy matches a
// Job's failure reason, not exit codes, so the codes are mapped in each Job first:
//   Count   (backoffLimit 0: the Job fails as BackoffLimitExceeded, and the JobSet's catch-all
//           rule restarts the whole JobSet): the table's RestartJob codes (75, 143) and
//           evictions (the pod condition DisruptionTarget, the table's PodEvicted).
//   FailJob (the Job fails as PodFailurePolicy, and the JobSet's first rule fails the JobSet):
//           every other code of the table, 1-63 included.
// Ignore is not used: it replaces the one pod inside its Job without failing the Job, so the
// JobSet would never restart as a whole, and it counts against no limit.
#pragma once

#include <string>
#include <vector>

namespace hetrun::plan {

/// One rule of a Job's podFailurePolicy: exit codes (ascending, unique) or a pod condition.
struct PodFailureRule {
  std::string action;         ///< "Count" or "FailJob"
  std::vector<int> codes;     ///< onExitCodes values (operator In); empty for a condition rule
  std::string pod_condition;  ///< "DisruptionTarget" for evictions; empty for an exit-code rule
  std::string why;            ///< a comment for the header
};

/// The rules in the order the Job tries them: evictions, the restartable codes, the failing ones.
std::vector<PodFailureRule> PodFailureRules();

}  // namespace hetrun::plan

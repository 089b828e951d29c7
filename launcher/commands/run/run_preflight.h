// The preflight of `hetrun run` (docs/ARCHITECTURE.md §2.2) as the command drives it: the checks
// with the shutdown signals watched (commands/phase_signals.h), and --check-collectives right
// before the workers (§5.11).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "commands/command.h"
#include "commands/run/run_plan.h"
#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "preflight/preflight.h"
#include "rendezvous/one_node_store.h"

namespace hetrun::launcher {

/// The preflight with the shutdown signals watched: nullopt result + exit code when a signal
/// stopped it (the other nodes are told).
Result<int> PreflightUnderSignals(const RunPlan& plan, const CommandContext& context,
                                  const std::vector<std::string>& command, PreflightResult* out);

/// --check-collectives, right before the workers (preflight/collective/collective_check.h): nullopt when they
/// may start, else the exit code (logged, in the termination log, told to the other nodes).
Result<std::optional<int>> CheckCollectives(const RunPlan& plan, const PreflightResult& preflight,
                                            const Environment& env, const OneNodeStore* store);

}  // namespace hetrun::launcher

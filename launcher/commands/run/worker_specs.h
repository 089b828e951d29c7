// The workers of each attempt of `hetrun run` (docs/ARCHITECTURE.md §4.2): their environment
// (WorkerEnvironment, the preflight's and the stage's additions, the pipeline layout's stage and
// engine arguments) and where they meet (rendezvous/attempt_store.h).
#pragma once

#include "commands/run/run_plan.h"
#include "hetrun/base/env.h"
#include "preflight/preflight.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {

/// The workers of one attempt: WorkerEnvironment plus what the preflight and the stage add.
WorkerSpecsFn WorkerSpecs(const RunPlan& plan, const PreflightResult& preflight,
                          const Environment& env);

}  // namespace hetrun::launcher

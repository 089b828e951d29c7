// `hetrun run --dry-run`: what each local worker would get, nothing started.
#pragma once

#include "commands/command.h"
#include "commands/run/run_plan.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// `hetrun run --dry-run`: each local worker's command and the variables hetrun sets or changes
/// for it, and torchrun's variables always (sorted; the rest of its environment is hetrun's own),
/// nothing started. The preflight's additions (memory ceiling, agent store) are not included: the
/// preflight does not run.
Status PrintDryRun(const RunPlan& plan, const CommandContext& context);

}  // namespace hetrun::launcher

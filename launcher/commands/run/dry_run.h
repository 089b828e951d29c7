// `hetrun run --dry-run`: what each local worker would get, no worker started.
#pragma once

#include "commands/command.h"
#include "commands/run/run_plan.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// `hetrun run --dry-run`: each local worker's command and the variables hetrun sets or changes
/// for it, and torchrun's variables always (sorted; the rest of its environment is hetrun's own),
/// no worker started. The environment comes from the code a run uses (WorkerSpecs and the
/// preflight's WorkerAdditions), so the two cannot differ: this node's preflight runs (the GPUs
/// declared or probed in a child, the kernel-image check when asked, the memory ceiling), without
/// the rendezvous, so on a job of several nodes the ceiling is this node's (a run's is the minimum
/// over every node's; the output says so); TORCHELASTIC_USE_AGENT_STORE is what a run would
/// write (one node: whether hetrun finds the store plugin, as the store does at start). Paths in
/// the run folder, made only by a run, are shown as <...>.
Status PrintDryRun(RunPlan& plan, const CommandContext& context);

}  // namespace hetrun::launcher

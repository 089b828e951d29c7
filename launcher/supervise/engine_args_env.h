// The engines' pipeline arguments for one attempt's workers (docs/how-to/replan-restart.md,
// "Megatron-LM and torchtitan"): HETRUN_MEGATRON_ARGS and HETRUN_TORCHTITAN_ARGS, rendered from
// the layout the attempt runs (after a re-plan, the split the workers recorded), one argument a
// line, for a wrapper script (examples/launchers/) to splice into the engine's command line.
#pragma once

#include <map>
#include <string>

#include "hetrun/pipeline/job_layout.h"
#include "hetrun/plan/torchtitan_args.h"

namespace hetrun::launcher {

/// Both variables for `layout`. A layout an engine cannot take (stages with different replica
/// counts, a model without transformer layers) leaves that engine's variable out, and attempt 0
/// logs why once (info: most pipeline jobs run neither engine).
std::map<std::string, std::string> EngineArgsEnvironment(const pipeline::JobLayout& layout,
                                                         const plan::TorchtitanNames& names,
                                                         int attempt);

}  // namespace hetrun::launcher

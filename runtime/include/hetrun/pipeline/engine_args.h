// A job layout's split as the pipeline arguments of Megatron-LM and torchtitan, for each attempt
// of `hetrun run` (docs/how-to/replan-restart.md, "Megatron-LM and torchtitan"): the workers get
// them in HETRUN_MEGATRON_ARGS and HETRUN_TORCHTITAN_ARGS, one argument a line, and a wrapper
// script (examples/launchers/) splices them into the engine's command line, so a restart after
// a re-plan starts the engine on the recorded split. The same writers as `hetrun plan --emit
// megatron|torchtitan` (hetrun/plan/megatron_layout.h, torchtitan_args.h), fed from the layout.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/plan/torchtitan_args.h"

namespace hetrun::pipeline {

/// --pipeline-model-parallel-size, --num-layers and --pipeline-model-parallel-layout for the
/// layout's stages; the layer names (layer_names, "layer" when the layout has none) say which
/// layer is the embedding (E) and the head (L), as for `--emit megatron`. kInvalidArgument when
/// the stages differ in replicas (naming them), and for the model errors of MegatronLayoutFor.
Result<std::vector<std::string>> MegatronArgumentsOfLayout(const JobLayout& layout);

/// --parallelism.pipeline_parallel_degree, --parallelism.pipeline_parallel_schedule (1F1B or
/// GPipe, the layout's schedule) and --parallelism.module_fqns_per_model_part (one comma list a
/// stage, each its own argument) under `names`. The batch flags of `--emit torchtitan` are left
/// out: a layout does not know the micro-batch size, and a re-plan does not change it.
/// kInvalidArgument as for MegatronArgumentsOfLayout.
Result<std::vector<std::string>> TorchtitanArgumentsOfLayout(const JobLayout& layout,
                                                             const plan::TorchtitanNames& names);

/// The arguments one a line, each followed by '\n' (`mapfile -t ARGS <<<"$VAR"` reads them back).
std::string ArgumentLines(const std::vector<std::string>& arguments);

}  // namespace hetrun::pipeline

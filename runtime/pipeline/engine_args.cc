#include "hetrun/pipeline/engine_args.h"

#include <map>

#include "hetrun/plan/megatron_layout.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::pipeline {
namespace {

// Both engines build every stage with the same data-parallel size.
Status CheckEqualReplicas(const JobLayout& layout, std::string_view engine) {
  std::map<int, std::string> stages_by_replicas;
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    std::string& list = stages_by_replicas[layout.stages[s].replicas()];
    list += (list.empty() ? "" : ",") + std::to_string(s);
  }
  if (stages_by_replicas.size() <= 1) return Status::Ok();
  std::string counts;
  for (const auto& [replicas, stages] : stages_by_replicas) {
    counts += (counts.empty() ? "" : "; ") + std::to_string(replicas) + " replica" +
              (replicas == 1 ? "" : "s") + " on stage(s) " + stages;
  }
  return InvalidArgumentError(std::string(engine) +
                              " needs the same data-parallel size on every pipeline stage, but "
                              "the layout has " +
                              counts);
}

// The layout as the planner's figures: what the engine writers read (stages' layer ranges and
// replicas, the layers' names and the micro-batch count).
struct LayoutAsPlan {
  plan::SplitFigures split;
  plan::ModelSpec model;
};

LayoutAsPlan AsPlan(const JobLayout& layout) {
  LayoutAsPlan out;
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const StageLayout& stage = layout.stages[s];
    plan::StageFigures figures;
    figures.stage = static_cast<int64_t>(s);
    figures.first_layer = stage.first_layer;
    figures.layers = stage.layers;
    figures.slot.task = "stage-" + std::to_string(s);
    figures.slot.gpus = stage.replicas();
    out.split.stages.push_back(std::move(figures));
  }
  out.model.micro_batches = layout.micro_batches;
  for (int64_t k = 0; k < layout.num_layers; ++k) {
    plan::LayerSpec layer;
    layer.name = layout.layer_names.empty() ? "layer" : layout.layer_names[static_cast<size_t>(k)];
    out.model.layers.push_back(std::move(layer));
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> MegatronArgumentsOfLayout(const JobLayout& layout) {
  HETRUN_RETURN_IF_ERROR(CheckEqualReplicas(layout, "Megatron-LM"));
  const LayoutAsPlan plan = AsPlan(layout);
  HETRUN_ASSIGN_OR_RETURN(plan::MegatronLayout megatron,
                          plan::MegatronLayoutFor(plan.split, plan.model));
  return plan::MegatronArguments(megatron);
}

Result<std::vector<std::string>> TorchtitanArgumentsOfLayout(const JobLayout& layout,
                                                             const plan::TorchtitanNames& names) {
  HETRUN_RETURN_IF_ERROR(CheckEqualReplicas(layout, "torchtitan"));
  const LayoutAsPlan plan = AsPlan(layout);
  HETRUN_ASSIGN_OR_RETURN(plan::TorchtitanArgs args,
                          plan::TorchtitanArgsFor(plan.split, plan.model, names));
  std::vector<std::string> out = {"--parallelism.pipeline_parallel_degree",
                                  std::to_string(args.pipeline_degree),
                                  "--parallelism.pipeline_parallel_schedule",
                                  layout.schedule == ScheduleKind::kGPipe ? "GPipe" : "1F1B",
                                  "--parallelism.module_fqns_per_model_part"};
  out.insert(out.end(), args.stages.begin(), args.stages.end());
  return out;
}

std::string ArgumentLines(const std::vector<std::string>& arguments) {
  std::string out;
  for (const std::string& argument : arguments) out += argument + "\n";
  return out;
}

}  // namespace hetrun::pipeline

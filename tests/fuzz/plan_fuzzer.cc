// Fuzzes the planner's inputs: model and cluster JSON, split lists, measurements.json (`hetrun
// plan --measured`), and (when they parse and are small) the planner itself, the measured re-plan,
// the manifest writer and the Megatron arguments.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hetrun/pipeline/measured_plan.h"
#include "hetrun/pipeline/measurements.h"
#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/megatron_layout.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pipeline_planner.h"
#include "hetrun/plan/volcano_job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // A seed holds "MODEL\x00CLUSTER\x00SPLIT"; any part may be missing or garbage.
  std::string_view parts[3];
  for (size_t i = 0, start = 0; i < 3 && start <= text.size(); ++i) {
    size_t end = i < 2 ? text.find('\0', start) : std::string_view::npos;
    if (end == std::string_view::npos) end = text.size();
    parts[i] = text.substr(start, end - start);
    start = end + 1;
  }
  auto model = hetrun::plan::ParseModelSpec(parts[0], "model");
  auto cluster = hetrun::plan::ParseClusterSpec(parts[1], "cluster");
  (void)hetrun::plan::ParseClusterSpec(parts[0], "cluster");
  (void)hetrun::plan::ParseModelSpec(parts[1], "model");
  (void)hetrun::plan::ParseSplit(parts[2], 64, 6, "--compare-split");
  // The third part may also be a measurements file.
  auto measurements = hetrun::pipeline::ParseMeasurements(parts[2], "measurements");
  if (!model.ok() || !cluster.ok() || model->layers.size() > 256) return 0;
  if (measurements.ok()) {
    auto measured =
        hetrun::pipeline::PlanFromMeasurements(*measurements, "measurements", *model, *cluster);
    if (measured.ok()) {
      (void)hetrun::pipeline::MeasuredPlanText(*measured);
      (void)hetrun::pipeline::MeasuredPlanJson(*measured);
    }
  }
  auto split = hetrun::plan::ParseSplit(parts[2], static_cast<int64_t>(model->layers.size()),
                                        static_cast<int64_t>(cluster->stages.size()), "split");
  std::optional<std::span<const int64_t>> compare;
  if (split.ok()) compare = std::span<const int64_t>(*split);
  auto plan = hetrun::plan::PlanPipeline(*model, *cluster, compare);
  if (!plan.ok()) return 0;
  (void)hetrun::plan::PlanJson(*plan, *model);
  (void)hetrun::plan::PlanText(*plan, *model);
  (void)hetrun::plan::PipelineJobYaml(*plan, *cluster);
  (void)hetrun::plan::HomogeneousJobYaml(*cluster, "");
  auto megatron = hetrun::plan::MegatronLayoutFor(plan->best, *model);
  if (megatron.ok()) (void)hetrun::plan::MegatronArgumentsText(*megatron, plan->best, *model);
  return 0;
}

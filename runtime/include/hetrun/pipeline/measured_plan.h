// `hetrun plan --measured FILE` (docs/reference/cli/plan.md): a pipeline plan from measured
// stage times instead of datasheet speeds. Each stage's speed is fitted from the run's
// measurements.json (hetrun/pipeline/rebalance.h FitSpeeds: the same fit as the live
// re-balancer, per-layer costs refitted where layer times were measured), the exact planner runs
// over the fitted speeds, and the report gives per-family speeds beside the datasheet's, the
// predicted iteration of the measured (current) split and of the new one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/measurements.h"
#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::pipeline {

/// One GPU family's speed: the datasheet's (0 when unknown) and the measured one, per GPU,
/// scaled so the reference family (the measured family with the lowest datasheet speed) keeps its
/// datasheet value; cost_per_ms is the raw fit (cost units per millisecond per GPU).
struct FamilySpeed {
  std::string family;
  double datasheet = 0;
  double measured = 0;
  double cost_per_ms = 0;
  std::vector<int64_t> stages;
};

struct MeasuredPlan {
  std::string source;         ///< the measurements file
  int64_t windows = 0;        ///< complete windows fitted
  plan::ModelSpec model;      ///< fitted layer costs; times in milliseconds
  plan::ClusterSpec cluster;  ///< fitted per-GPU speeds (cost units per ms)
  plan::PipelinePlan plan;    ///< best = the new split, compared = the measured split (ms)
  std::vector<FamilySpeed> families;
  std::vector<double> measured_stage_ms;  ///< per stage, mean over the measured split's windows
  double measured_iteration_ms = 0;       ///< 1F1B of those, with the run's micro-batches
};

/// The plan of `model` over `cluster` with speeds fitted from `measurements` (read from
/// `source`). kInvalidArgument (exit 78) naming `source` and the JSON path when the
/// measurements are of another model ($.num_layers, $.layer_names[i]) or pipeline ($.ranks:
/// stage count), or hold no window in which every stage was measured.
Result<MeasuredPlan> PlanFromMeasurements(const Measurements& measurements, std::string_view source,
                                          plan::ModelSpec model, plan::ClusterSpec cluster);

/// A model and cluster from a layout (the layout file, or `hetrun plan --json` output): its layer
/// names and costs (1 each when not given), micro-batches, stages (one slot each, its replicas,
/// its family with the datasheet speed when known, no memory limit).
void SpecsFromLayout(const JobLayout& layout, plan::ModelSpec* model, plan::ClusterSpec* cluster);

/// Reads `path` as a layout file, else as `hetrun plan --json` output (its replicas give the
/// world size); errors name the file.
Result<JobLayout> LoadLayoutOrPlan(const std::string& path);

/// The report as text, and as `hetrun plan --json` output (which `hetrun run --plan` reads)
/// with a "measured" object added.
std::string MeasuredPlanText(const MeasuredPlan& measured);
std::string MeasuredPlanJson(const MeasuredPlan& measured);

}  // namespace hetrun::pipeline

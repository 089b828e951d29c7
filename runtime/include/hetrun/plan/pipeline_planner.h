// Stage planning for pipelines whose stages run on different GPU generations: the contiguous
// layer split that minimises the slowest stage's time (exact dynamic programming), with each
// stage's memory under its limit, and the 1F1B figures that follow (docs/ARCHITECTURE.md §5).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/stage_links.h"

namespace hetrun::plan {

/// One stage of a split, with its figures.
struct StageFigures {
  int64_t stage = 0;
  StageSlot slot;
  int64_t first_layer = 0;  ///< index into ModelSpec::layers
  int64_t layers = 0;       ///< >= 1
  /// Σ cost / (speed × replicas) + transfer_time: per micro-batch, in the model's cost unit
  double time = 0;
  /// Its outgoing link transfers: the activations it sends forward and the gradients it sends
  /// back, per micro-batch, in the cost unit (0 without activation_bytes).
  double transfer_time = 0;
  double memory_bytes = 0;        ///< Σ bytes of its layers
  double memory_limit_bytes = 0;  ///< min(slot memory, job ceiling)
  bool fits_memory = true;
};

/// A boundary between stage `boundary` and the next: the activations of its last layer go forward
/// over `link`, their gradients (the same bytes) come back over it.
struct BoundaryFigures {
  int64_t boundary = 0;
  int64_t after_layer = 0;   ///< the sending stage's last layer
  std::optional<Link> link;  ///< BoundaryLink of the two pods; nullopt: not charged
  double bytes = 0;          ///< per micro-batch: activation_bytes × micro_batch_size
  double forward_ms = 0;     ///< bytes over the link, one way
  double backward_ms = 0;
  double forward_time = 0;   ///< forward_ms / cost_unit_ms: charged to stage `boundary`
  double backward_time = 0;  ///< backward_ms / cost_unit_ms: charged to stage `boundary` + 1
};

/// A split's figures. Iteration time by the 1F1B formula T = Σ τ + (M − 1)·max τ; the bubble
/// fraction is the share of the stages' time spent idle: 1 − M·Σ τ / (S·T) (for equal stages
/// (S − 1)/(M + S − 1)).
struct SplitFigures {
  std::vector<StageFigures> stages;
  std::vector<BoundaryFigures> boundaries;  ///< S − 1, in pipeline order
  double max_stage_time = 0;
  double sum_stage_time = 0;
  double iteration_time = 0;
  double bubble_fraction = 0;
  bool fits_memory = true;

  /// Layers per stage ("4,14,14,14,14,4").
  std::string CountsString() const;
};

/// Figures of the split with the given layers per stage. kInvalidArgument when the counts are
/// not one positive number per stage summing to the model's layers (memory is reported, not
/// enforced).
Result<SplitFigures> EvaluateSplit(const ModelSpec& model, const ClusterSpec& cluster,
                                   std::span<const int64_t> counts);

/// Layers per stage as even as possible; the first L mod S stages get one more.
std::vector<int64_t> EvenSplit(int64_t layers, int64_t stages);

/// Parses "8,12,12,12,12,8" for a model of `layers` layers over `stages` stages; errors name
/// `what` (the flag) and say what does not add up.
Result<std::vector<int64_t>> ParseSplit(std::string_view text, int64_t layers, int64_t stages,
                                        std::string_view what);

struct PipelinePlan {
  SplitFigures best;  ///< min max τ; among those, min Σ τ (so min 1F1B iteration time)
  SplitFigures even;  ///< EvenSplit, for comparison
  std::optional<SplitFigures> compared;  ///< a hand split, when given
  CollectiveLinks links;                 ///< the links of the stages' groups and of the job
  int64_t micro_batches = 0;
  int64_t micro_batch_size = 1;
};

/// The exact optimal split: every stage non-empty, contiguous, memory under its limit. With
/// activation_bytes, each stage's time includes its outgoing transfers (BoundaryFigures), so the
/// split avoids boundaries after layers whose activations are costly to send.
/// kInvalidArgument when there are more stages than layers, or when no split fits in memory (the
/// message names the first stage that cannot fit under any split).
Result<PipelinePlan> PlanPipeline(const ModelSpec& model, const ClusterSpec& cluster,
                                  std::optional<std::span<const int64_t>> compare = std::nullopt);

/// The plan as the JSON of docs/ARCHITECTURE.md §4.5 (stages, max_stage_time,
/// even_split_max_stage_time, plus iteration figures and the splits compared).
std::string PlanJson(const PipelinePlan& plan, const ModelSpec& model);

/// The plan as a human-readable table.
std::string PlanText(const PipelinePlan& plan, const ModelSpec& model);

}  // namespace hetrun::plan

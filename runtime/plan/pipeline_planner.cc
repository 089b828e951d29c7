#include "hetrun/plan/pipeline_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "hetrun/base/units.h"

namespace hetrun::plan {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double LimitOf(const StageSlot& slot, const ClusterSpec& cluster) {
  return cluster.memory_ceiling_bytes ? std::min(slot.memory_bytes, *cluster.memory_ceiling_bytes)
                                      : slot.memory_bytes;
}

// Prefix sums of cost and bytes: the time and memory of layers [i, j) are differences of two
// entries, so every split is evaluated with the same arithmetic (the planner's two passes and
// EvaluateSplit agree bit for bit).
struct Prefix {
  std::vector<double> cost;
  std::vector<double> bytes;

  explicit Prefix(const ModelSpec& model) : cost(1, 0.0), bytes(1, 0.0) {
    for (const LayerSpec& layer : model.layers) {
      cost.push_back(cost.back() + layer.cost);
      bytes.push_back(bytes.back() + layer.bytes);
    }
  }
  double Time(size_t i, size_t j, double speed) const { return (cost[j] - cost[i]) / speed; }
  double Bytes(size_t i, size_t j) const { return bytes[j] - bytes[i]; }
};

// Stage times with link transfers: stage s holding layers [i, j) takes its compute, plus sending
// the gradients of layer i − 1's activations back (s > 0), plus sending layer j − 1's activations
// forward (s < S − 1). Every caller uses Time(), so all passes agree bit for bit.
struct Costs {
  const ModelSpec& model;
  Prefix prefix;
  std::vector<double> speed;              // per stage: family speed × replicas
  std::vector<std::optional<Link>> link;  // per boundary
  double cost_unit_ms = 0;                // 0: transfers are not charged
  std::vector<double> charge;             // [b × L + layer]: Charge(b, layer), when charged

  Costs(const ModelSpec& m, const ClusterSpec& cluster) : model(m), prefix(m) {
    for (size_t s = 0; s < cluster.stages.size(); ++s) {
      const StageSlot& slot = cluster.stages[s];
      speed.push_back(slot.speed * static_cast<double>(slot.gpus));
      if (s + 1 < cluster.stages.size()) link.push_back(BoundaryLink(slot, cluster.stages[s + 1]));
    }
    if (!m.HasActivationBytes() || !m.cost_unit_ms) return;
    cost_unit_ms = *m.cost_unit_ms;
    const size_t layers = m.layers.size();
    charge.assign(link.size() * layers, 0.0);
    for (size_t b = 0; b < link.size(); ++b) {
      if (!link[b]) continue;
      for (size_t k = 0; k < layers; ++k) {
        charge[b * layers + k] = TransferMs(Bytes(k), *link[b]) / cost_unit_ms;
      }
    }
  }
  double Bytes(size_t layer) const {
    return model.layers[layer].activation_bytes * static_cast<double>(model.micro_batch_size);
  }
  // One way over boundary b after `layer`, in the cost unit.
  double Charge(size_t b, size_t layer) const {
    return charge.empty() ? 0.0 : charge[b * model.layers.size() + layer];
  }
  double In(size_t s, size_t i) const { return s == 0 ? 0.0 : Charge(s - 1, i - 1); }
  double Out(size_t s, size_t j) const { return s + 1 == speed.size() ? 0.0 : Charge(s, j - 1); }
  // A lower bound of Time(s, i, j) that only grows as i decreases (the DP's early stop).
  double Lower(size_t s, size_t i, size_t j) const {
    return prefix.Time(i, j, speed[s]) + Out(s, j);
  }
  double Time(size_t s, size_t i, size_t j) const {
    return prefix.Time(i, j, speed[s]) + In(s, i) + Out(s, j);
  }
};

BoundaryFigures Boundary(const Costs& costs, size_t b, size_t after_layer) {
  BoundaryFigures boundary;
  boundary.boundary = static_cast<int64_t>(b);
  boundary.after_layer = static_cast<int64_t>(after_layer);
  boundary.link = costs.link[b];
  boundary.bytes = costs.Bytes(after_layer);
  if (boundary.link) {
    boundary.forward_ms = TransferMs(boundary.bytes, *boundary.link);
    boundary.backward_ms = boundary.forward_ms;
  }
  boundary.forward_time = costs.Charge(b, after_layer);
  boundary.backward_time = boundary.forward_time;
  return boundary;
}

SplitFigures Figures(const ModelSpec& model, const ClusterSpec& cluster, const Costs& costs,
                     std::span<const int64_t> counts) {
  const Prefix& prefix = costs.prefix;
  SplitFigures figures;
  size_t first = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    const StageSlot& slot = cluster.stages[s];
    size_t end = first + static_cast<size_t>(counts[s]);
    StageFigures stage;
    stage.stage = static_cast<int64_t>(s);
    stage.slot = slot;
    stage.first_layer = static_cast<int64_t>(first);
    stage.layers = counts[s];
    stage.time = costs.Time(s, first, end);
    stage.transfer_time = costs.In(s, first) + costs.Out(s, end);
    if (s + 1 < counts.size()) figures.boundaries.push_back(Boundary(costs, s, end - 1));
    stage.memory_bytes = prefix.Bytes(first, end);
    stage.memory_limit_bytes = LimitOf(slot, cluster);
    stage.fits_memory = stage.memory_bytes <= stage.memory_limit_bytes;
    figures.fits_memory = figures.fits_memory && stage.fits_memory;
    figures.max_stage_time = std::max(figures.max_stage_time, stage.time);
    figures.sum_stage_time += stage.time;
    figures.stages.push_back(std::move(stage));
    first = end;
  }
  auto m = static_cast<double>(model.micro_batches);
  auto s = static_cast<double>(counts.size());
  figures.iteration_time = figures.sum_stage_time + (m - 1) * figures.max_stage_time;
  figures.bubble_fraction = figures.iteration_time > 0
                                ? 1.0 - m * figures.sum_stage_time / (s * figures.iteration_time)
                                : 0.0;
  return figures;
}

Status CheckShape(const ModelSpec& model, const ClusterSpec& cluster) {
  if (cluster.stages.empty()) return InvalidArgumentError("the cluster has no pipeline stages");
  if (model.layers.empty()) return InvalidArgumentError("the model has no layers");
  if (cluster.stages.size() > model.layers.size()) {
    return InvalidArgumentError("the cluster has " + std::to_string(cluster.stages.size()) +
                                " pipeline stages but the model has only " +
                                std::to_string(model.layers.size()) +
                                " layers: every stage needs at least one layer");
  }
  return Status::Ok();
}

std::string StageName(const StageSlot& slot, size_t s) {
  return "stage " + std::to_string(s) + " (task '" + slot.task + "' replica " +
         std::to_string(slot.task_index) + ", family " + slot.family + ")";
}

// Explains an infeasible plan: the first stage s such that no placement of stages 0..s fits.
Status NoFitError(const ModelSpec& model, const ClusterSpec& cluster, size_t stage,
                  const Prefix& prefix) {
  const size_t layers = model.layers.size();
  const size_t stages = cluster.stages.size();
  const StageSlot& slot = cluster.stages[stage];
  double limit = LimitOf(slot, cluster);
  // The layers this stage could ever start at or take: [stage, layers - stages + stage].
  size_t lo = stage;
  size_t hi = layers - stages + stage;
  size_t smallest = lo;
  if (stage == 0) {
    smallest = 0;  // the first stage holds the first layer
  } else if (stage + 1 == stages) {
    smallest = layers - 1;  // the last stage holds the last layer
  } else {
    for (size_t i = lo; i <= hi; ++i) {
      if (model.layers[i].bytes < model.layers[smallest].bytes) smallest = i;
    }
  }
  std::string message = "no layer split fits in memory: " + StageName(slot, stage) +
                        " cannot fit under any split (limit " +
                        FormatMiB(static_cast<uint64_t>(limit)) + ")";
  if (prefix.Bytes(smallest, smallest + 1) > limit) {
    message += "; the smallest layer it must or could hold, '" + model.layers[smallest].name +
               "' (layer " + std::to_string(smallest) + "), needs " +
               FormatMiB(static_cast<uint64_t>(model.layers[smallest].bytes));
  } else {
    message += "; what the stages before it can hold leaves it more than that";
  }
  return InvalidArgumentError(message);
}

}  // namespace

std::string SplitFigures::CountsString() const {
  std::string out;
  for (const StageFigures& stage : stages) {
    out += (out.empty() ? "" : ",") + std::to_string(stage.layers);
  }
  return out;
}

std::vector<int64_t> EvenSplit(int64_t layers, int64_t stages) {
  std::vector<int64_t> counts;
  if (stages <= 0) return counts;
  for (int64_t s = 0; s < stages; ++s) counts.push_back(layers / stages + (s < layers % stages));
  return counts;
}

Result<std::vector<int64_t>> ParseSplit(std::string_view text, int64_t layers, int64_t stages,
                                        std::string_view what) {
  std::string flag(what);
  std::vector<int64_t> counts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view part =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    auto count = ParseIntInRange(part, 1, kMaxModelLayers);
    if (!count.ok()) {
      return InvalidArgumentError(flag + " '" + std::string(text.substr(0, 200)) + "': entry " +
                                  std::to_string(counts.size()) + " must be a layer count >= 1 (" +
                                  count.status().message() + ")");
    }
    counts.push_back(*count);
    if (comma == std::string_view::npos || counts.size() > static_cast<size_t>(kMaxStages)) break;
    start = comma + 1;
  }
  if (static_cast<int64_t>(counts.size()) != stages) {
    return InvalidArgumentError(flag + " gives " + std::to_string(counts.size()) +
                                " stages, the cluster has " + std::to_string(stages));
  }
  int64_t sum = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (sum != layers) {
    return InvalidArgumentError(flag + " adds up to " + std::to_string(sum) +
                                " layers, the model has " + std::to_string(layers));
  }
  return counts;
}

Result<SplitFigures> EvaluateSplit(const ModelSpec& model, const ClusterSpec& cluster,
                                   std::span<const int64_t> counts) {
  HETRUN_RETURN_IF_ERROR(CheckShape(model, cluster));
  if (counts.size() != cluster.stages.size()) {
    return InvalidArgumentError("a split needs one layer count per stage (" +
                                std::to_string(cluster.stages.size()) + "), got " +
                                std::to_string(counts.size()));
  }
  int64_t sum = 0;
  for (int64_t count : counts) {
    if (count < 1) return InvalidArgumentError("every stage of a split needs at least one layer");
    sum += count;
  }
  if (sum != static_cast<int64_t>(model.layers.size())) {
    return InvalidArgumentError("a split must cover the model's " +
                                std::to_string(model.layers.size()) + " layers, got " +
                                std::to_string(sum));
  }
  return Figures(model, cluster, Costs(model, cluster), counts);
}

namespace {

// Pass 1: best[s][j] = the least possible slowest-stage time when stages 0..s hold layers
// [0, j), each stage non-empty and within its memory. Stage s holds [i, j) with s <= i < j and
// j <= layers - (stages - 1 - s). Scanning i downwards, the stage's time and bytes only grow,
// so the scan stops at the first i that cannot improve or does not fit. Returns best for the
// whole model: the least slowest-stage time of any split.
Result<double> LeastSlowestStage(const ModelSpec& model, const ClusterSpec& cluster,
                                 const Costs& costs, const std::vector<double>& limit) {
  const Prefix& prefix = costs.prefix;
  const size_t layers = model.layers.size();
  const size_t stages = cluster.stages.size();
  const size_t width = layers + 1;
  std::vector<double> best(stages * width, kInfinity);
  for (size_t s = 0; s < stages; ++s) {
    const size_t j_max = layers - (stages - 1 - s);
    for (size_t j = s + 1; j <= j_max; ++j) {
      double& cell = best[s * width + j];
      // Stage 0 starts at layer 0; a later stage starts after at least one layer per stage.
      const size_t i_min = s == 0 ? 0 : s;
      for (size_t i = j; i-- > i_min;) {
        if (prefix.Bytes(i, j) > limit[s]) break;
        if (costs.Lower(s, i, j) >= cell) break;
        if (s == 0 && i != 0) continue;
        double before = s == 0 ? 0.0 : best[(s - 1) * width + i];
        cell = std::min(cell, std::max(before, costs.Time(s, i, j)));
      }
    }
    bool reachable = false;
    for (size_t j = s + 1; j <= j_max && !reachable; ++j)
      reachable = best[s * width + j] < kInfinity;
    if (!reachable) return NoFitError(model, cluster, s, prefix);
  }
  const double bound = best[(stages - 1) * width + layers];
  if (!(bound < kInfinity)) return NoFitError(model, cluster, stages - 1, prefix);
  return bound;
}

// Pass 2: among splits whose every stage takes at most `bound`, the least Σ τ (which then
// minimises the 1F1B iteration time Σ τ + (M − 1)·max τ). from[s][j] is stage s's first layer.
// Returns the layers per stage.
std::vector<int64_t> LeastTotalSplit(const ModelSpec& model, const ClusterSpec& cluster,
                                     const Costs& costs, const std::vector<double>& limit,
                                     double bound) {
  const size_t layers = model.layers.size();
  const size_t stages = cluster.stages.size();
  const size_t width = layers + 1;
  std::vector<double> sum(stages * width, kInfinity);
  std::vector<size_t> from(stages * width, 0);
  for (size_t s = 0; s < stages; ++s) {
    const size_t j_max = layers - (stages - 1 - s);
    for (size_t j = s + 1; j <= j_max; ++j) {
      double& cell = sum[s * width + j];
      const size_t i_min = s == 0 ? 0 : s;
      for (size_t i = j; i-- > i_min;) {
        if (costs.prefix.Bytes(i, j) > limit[s]) break;
        if (costs.Lower(s, i, j) > bound) break;
        double time = costs.Time(s, i, j);
        if (time > bound) continue;
        if (s == 0 && i != 0) continue;
        double before = s == 0 ? 0.0 : sum[(s - 1) * width + i];
        if (before + time < cell) {
          cell = before + time;
          from[s * width + j] = i;
        }
      }
    }
  }
  std::vector<int64_t> counts(stages);
  size_t end = layers;
  for (size_t s = stages; s-- > 0;) {
    size_t start = from[s * width + end];
    counts[s] = static_cast<int64_t>(end - start);
    end = start;
  }
  return counts;
}

}  // namespace

Result<PipelinePlan> PlanPipeline(const ModelSpec& model, const ClusterSpec& cluster,
                                  std::optional<std::span<const int64_t>> compare) {
  HETRUN_RETURN_IF_ERROR(CheckShape(model, cluster));
  const size_t layers = model.layers.size();
  const size_t stages = cluster.stages.size();
  const Costs costs(model, cluster);
  std::vector<double> limit(stages);
  for (size_t s = 0; s < stages; ++s) limit[s] = LimitOf(cluster.stages[s], cluster);
  HETRUN_ASSIGN_OR_RETURN(double bound, LeastSlowestStage(model, cluster, costs, limit));
  std::vector<int64_t> counts = LeastTotalSplit(model, cluster, costs, limit, bound);

  PipelinePlan plan;
  plan.micro_batches = model.micro_batches;
  plan.micro_batch_size = model.micro_batch_size;
  plan.best = Figures(model, cluster, costs, counts);
  std::vector<int64_t> even = EvenSplit(static_cast<int64_t>(layers), static_cast<int64_t>(stages));
  plan.even = Figures(model, cluster, costs, even);
  plan.links = SummariseLinks(cluster.stages);
  if (compare) {
    HETRUN_ASSIGN_OR_RETURN(SplitFigures compared, EvaluateSplit(model, cluster, *compare));
    plan.compared = std::move(compared);
  }
  return plan;
}

}  // namespace hetrun::plan

#include "hetrun/pipeline/rebalance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace hetrun::pipeline {
namespace {

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

std::string Ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

bool FiniteNonNegative(double value) {
  return std::isfinite(value) && value >= 0;
}

Status CheckStage(const StageMeasurement& m, int64_t first, int64_t layers, size_t s) {
  const std::string where = "stage " + std::to_string(s);
  if (m.first_layer != first || m.layers != layers) {
    return InvalidArgumentError(where + " measured layers [" + std::to_string(m.first_layer) +
                                ", " + std::to_string(m.first_layer + m.layers) +
                                ") but the split gives it [" + std::to_string(first) + ", " +
                                std::to_string(first + layers) + ")");
  }
  if (!FiniteNonNegative(m.forward_ms) || !FiniteNonNegative(m.backward_ms) ||
      !(m.forward_ms + m.backward_ms > 0)) {
    return InvalidArgumentError(where + ": forward_ms and backward_ms must be finite, >= 0 and " +
                                "not both 0, got " + std::to_string(m.forward_ms) + " and " +
                                std::to_string(m.backward_ms));
  }
  if (m.layer_ms.empty()) return Status::Ok();
  if (static_cast<int64_t>(m.layer_ms.size()) != layers) {
    return InvalidArgumentError(where + ": layer_ms has " + std::to_string(m.layer_ms.size()) +
                                " entries for " + std::to_string(layers) + " layers");
  }
  double sum = 0;
  for (double ms : m.layer_ms) {
    if (!FiniteNonNegative(ms)) {
      return InvalidArgumentError(where + ": layer_ms must hold finite numbers >= 0");
    }
    sum += ms;
  }
  if (!(sum > 0)) return InvalidArgumentError(where + ": layer_ms are all 0");
  return Status::Ok();
}

std::vector<int64_t> CountsOf(std::span<const StageMeasurement> window) {
  std::vector<int64_t> counts;
  for (const StageMeasurement& m : window) counts.push_back(m.layers);
  return counts;
}

double Iteration(std::span<const double> stage_ms, int64_t micro_batches) {
  double sum = 0, max = 0;
  for (double t : stage_ms) {
    sum += t;
    max = std::max(max, t);
  }
  return sum + static_cast<double>(micro_batches - 1) * max;
}

// The median of `values` (not empty); the mean of the two middle ones for an even count.
double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// One window's stage speeds and layer costs, added into `sums` (zeros: the window's own fit).
// Without layer times a stage's speed is its prior cost over its measured time. With them, the
// layer times are scaled to add up to the stage's time (overheads spread in proportion), the speed
// is the median over its layers of prior cost / layer time (a few layers whose prior is wrong, an
// embedding or an output layer, do not move it), and each layer's cost is speed x its time.
void AddWindow(std::span<const double> prior, std::span<const StageMeasurement> window,
               SpeedFit& sums) {
  for (size_t s = 0; s < window.size(); ++s) {
    const StageMeasurement& m = window[s];
    const auto first = static_cast<size_t>(m.first_layer);
    const auto layers = static_cast<size_t>(m.layers);
    const double stage_ms = m.forward_ms + m.backward_ms;
    if (m.layer_ms.empty()) {
      double cost = 0;
      for (size_t l = first; l < first + layers; ++l) cost += prior[l];
      sums.stage_speeds[s] += cost / stage_ms;
      for (size_t l = first; l < first + layers; ++l) sums.layer_costs[l] += prior[l];
      continue;
    }
    const double scale = stage_ms / std::accumulate(m.layer_ms.begin(), m.layer_ms.end(), 0.0);
    std::vector<double> ratios;
    for (size_t l = 0; l < layers; ++l) {
      if (m.layer_ms[l] > 0) ratios.push_back(prior[first + l] / (scale * m.layer_ms[l]));
    }
    const double speed = Median(ratios);
    sums.stage_speeds[s] += speed;
    for (size_t l = 0; l < layers; ++l) {
      // A layer measured at 0 ms keeps a sliver of its prior, so no cost is 0.
      sums.layer_costs[first + l] +=
          std::max(speed * scale * m.layer_ms[l], 1e-6 * prior[first + l]);
    }
  }
}

// Per stage speed and per layer cost, the median over the windows' fits: one implausible window
// (a 1 ms stage among 30 ms ones) cannot move them, as it would move a mean.
SpeedFit MedianFit(const std::vector<SpeedFit>& each) {
  SpeedFit fit;
  std::vector<double> values(each.size());
  for (size_t s = 0; s < each.front().stage_speeds.size(); ++s) {
    for (size_t w = 0; w < each.size(); ++w) values[w] = each[w].stage_speeds[s];
    fit.stage_speeds.push_back(Median(values));
  }
  for (size_t l = 0; l < each.front().layer_costs.size(); ++l) {
    for (size_t w = 0; w < each.size(); ++w) values[w] = each[w].layer_costs[l];
    fit.layer_costs.push_back(Median(values));
  }
  return fit;
}

}  // namespace

std::string CountsText(std::span<const int64_t> counts) {
  std::string out;
  for (int64_t c : counts) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

std::vector<int64_t> StageCounts(const JobLayout& layout) {
  std::vector<int64_t> counts;
  for (const StageLayout& stage : layout.stages) counts.push_back(stage.layers);
  return counts;
}

std::vector<double> PriorCosts(const JobLayout& layout) {
  std::vector<double> costs = layout.layer_costs;
  if (costs.empty()) costs.assign(static_cast<size_t>(layout.num_layers), 1.0);
  double mean = costs.empty() ? 1.0
                              : std::accumulate(costs.begin(), costs.end(), 0.0) /
                                    static_cast<double>(costs.size());
  const double floor = mean > 0 ? 1e-6 * mean : 1.0;
  for (double& c : costs) c = std::max(c, floor);
  return costs;
}

Status CheckWindow(std::span<const StageMeasurement> window, std::span<const int64_t> counts) {
  if (window.size() != counts.size()) {
    return InvalidArgumentError("the window measures " + std::to_string(window.size()) +
                                " stages, the split has " + std::to_string(counts.size()));
  }
  int64_t first = 0;
  for (size_t s = 0; s < window.size(); ++s) {
    HETRUN_RETURN_IF_ERROR(CheckStage(window[s], first, counts[s], s));
    first += counts[s];
  }
  return Status::Ok();
}

Result<SpeedFit> FitSpeeds(std::span<const double> prior_costs,
                           std::span<const std::vector<StageMeasurement>> windows) {
  if (windows.empty()) return InvalidArgumentError("no measured windows to fit speeds from");
  const size_t stages = windows.front().size();
  std::vector<SpeedFit> each;  // one fit per window
  for (size_t w = 0; w < windows.size(); ++w) {
    std::vector<int64_t> counts = CountsOf(windows[w]);
    if (windows[w].size() != stages || std::accumulate(counts.begin(), counts.end(), int64_t{0}) !=
                                           static_cast<int64_t>(prior_costs.size())) {
      return InvalidArgumentError("window " + std::to_string(w) + " measures " +
                                  std::to_string(windows[w].size()) + " stages over " +
                                  CountsText(counts) + " layers; the model has " +
                                  std::to_string(prior_costs.size()) + " layers over " +
                                  std::to_string(stages) + " stages");
    }
    Status valid = CheckWindow(windows[w], counts);
    if (!valid.ok()) return valid.WithContext("window " + std::to_string(w));
    SpeedFit one{std::vector<double>(stages, 0.0), std::vector<double>(prior_costs.size(), 0.0)};
    AddWindow(prior_costs, windows[w], one);
    each.push_back(std::move(one));
  }
  return MedianFit(each);
}

Result<plan::PipelinePlan> PlanFromFit(const SpeedFit& fit, int64_t micro_batches,
                                       std::span<const int64_t> current) {
  plan::ModelSpec model;
  model.micro_batches = std::max<int64_t>(micro_batches, 1);
  for (size_t l = 0; l < fit.layer_costs.size(); ++l) {
    model.layers.push_back({"layer." + std::to_string(l), fit.layer_costs[l], 0.0});
  }
  plan::ClusterSpec cluster;
  for (size_t s = 0; s < fit.stage_speeds.size(); ++s) {
    plan::StageSlot slot;
    slot.task = "stage";
    slot.task_index = static_cast<int64_t>(s);
    slot.speed = fit.stage_speeds[s];
    slot.memory_bytes = std::numeric_limits<double>::max();  // measured speeds carry no memory
    slot.gpus = 1;  // the measured speed already includes the stage's replicas
    cluster.stages.push_back(slot);
  }
  return plan::PlanPipeline(model, cluster, current);
}

double SpeedStandardError(std::span<const double> prior_costs,
                          std::span<const std::vector<StageMeasurement>> windows) {
  if (windows.size() < 2) return 0;
  std::vector<std::vector<double>> speeds;  // per window, per stage
  for (const std::vector<StageMeasurement>& window : windows) {
    Result<SpeedFit> one = FitSpeeds(prior_costs, std::span(&window, 1));
    if (!one.ok()) return 0;
    speeds.push_back(one->stage_speeds);
  }
  const auto n = static_cast<double>(speeds.size());
  double largest = 0;
  for (size_t s = 0; s < speeds.front().size(); ++s) {
    double mean = 0, square = 0;
    for (const std::vector<double>& w : speeds) mean += w[s] / n;
    for (const std::vector<double>& w : speeds) square += (w[s] - mean) * (w[s] - mean);
    const double deviation = std::sqrt(square / (n - 1));
    if (mean > 0) largest = std::max(largest, deviation / mean / std::sqrt(n));
  }
  return largest;
}

Status ValidateRebalanceOptions(const RebalanceOptions& options) {
  if (!(options.threshold > 0 && options.threshold < 1)) {
    return InvalidArgumentError("re-balance threshold must be in (0, 1), got " +
                                std::to_string(options.threshold));
  }
  if (options.settle_windows < 0 || options.history_windows < 1 || options.confirm_windows < 1 ||
      options.min_windows < 1 || options.min_windows > options.history_windows) {
    return InvalidArgumentError(
        "re-balance windows: settle_windows must be >= 0, history_windows and confirm_windows "
        ">= 1, min_windows in [1, history_windows]");
  }
  if (!(options.noise_margin >= 0 && options.noise_margin <= 10)) {
    return InvalidArgumentError("re-balance noise_margin must be in [0, 10], got " +
                                std::to_string(options.noise_margin));
  }
  if (!(options.return_factor >= 1 && options.return_factor * options.threshold < 1)) {
    return InvalidArgumentError(
        "re-balance return_factor must be >= 1 with return_factor x "
        "threshold < 1, got " +
        std::to_string(options.return_factor));
  }
  return Status::Ok();
}

Result<Rebalancer> Rebalancer::Create(const JobLayout& layout, RebalanceOptions options) {
  HETRUN_RETURN_IF_ERROR(ValidateJobLayout(layout, "re-balance layout"));
  HETRUN_RETURN_IF_ERROR(ValidateRebalanceOptions(options));
  return Rebalancer(layout, options);
}

Rebalancer::Rebalancer(const JobLayout& layout, RebalanceOptions options)
    : options_(options),
      micro_batches_(layout.micro_batches),
      prior_costs_(PriorCosts(layout)),
      counts_(StageCounts(layout)),
      measured_sum_ms_(counts_.size(), 0.0) {}

RebalanceDecision Rebalancer::Hold(RebalanceDecision decision, std::string reason) {
  decision.move = false;
  decision.reason = "hold: " + reason;
  return decision;
}

double Rebalancer::MeasuredIteration() const {
  std::vector<double> mean(measured_sum_ms_);
  for (double& t : mean) t /= static_cast<double>(std::max<int64_t>(windows_under_split_, 1));
  return Iteration(mean, micro_batches_);
}

bool Rebalancer::WasLeft(std::span<const int64_t> counts) const {
  for (const std::vector<int64_t>& left : left_splits_) {
    if (std::equal(left.begin(), left.end(), counts.begin(), counts.end())) return true;
  }
  return false;
}

RebalanceDecision Rebalancer::Decide(std::span<const StageMeasurement> window) {
  RebalanceDecision decision;
  decision.current_counts = counts_;
  decision.new_counts = counts_;
  Status valid = CheckWindow(window, counts_);
  if (!valid.ok()) return Hold(decision, "measurements not used: " + valid.message());
  history_.emplace_back(window.begin(), window.end());
  while (static_cast<int64_t>(history_.size()) > options_.history_windows) history_.pop_front();
  for (size_t s = 0; s < window.size(); ++s) {
    measured_sum_ms_[s] += window[s].forward_ms + window[s].backward_ms;
  }
  ++windows_under_split_;
  decision.measured_current_iteration_ms = MeasuredIteration();
  std::vector<std::vector<StageMeasurement>> windows(history_.begin(), history_.end());
  Result<SpeedFit> fit = FitSpeeds(prior_costs_, windows);
  if (!fit.ok()) return Hold(decision, "no fit: " + fit.status().message());
  Result<plan::PipelinePlan> plan = PlanFromFit(*fit, micro_batches_, counts_);
  if (!plan.ok()) return Hold(decision, "no plan: " + plan.status().message());
  for (const plan::StageFigures& stage : plan->compared->stages) {
    decision.predicted_current_ms.push_back(stage.time);
  }
  for (const plan::StageFigures& stage : plan->best.stages) {
    decision.new_counts[static_cast<size_t>(stage.stage)] = stage.layers;
    decision.predicted_new_ms.push_back(stage.time);
  }
  decision.predicted_current_iteration_ms = plan->compared->iteration_time;
  decision.predicted_new_iteration_ms = plan->best.iteration_time;
  decision.speed_standard_error = SpeedStandardError(prior_costs_, windows);
  if (static_cast<int64_t>(history_.size()) < options_.min_windows) {
    return Hold(decision, "measuring: window " + std::to_string(history_.size()) + " of the " +
                              std::to_string(options_.min_windows) + " before a first decision");
  }
  if (moves_ > 0 && windows_under_split_ <= options_.settle_windows) {
    return Hold(decision, "settling: window " + std::to_string(windows_under_split_) + " of " +
                              std::to_string(options_.settle_windows) + " after the move");
  }
  return Judge(std::move(decision));
}

RebalanceDecision Rebalancer::Judge(RebalanceDecision decision) {
  const std::string best = CountsText(decision.new_counts);
  if (decision.new_counts == counts_) {
    confirm_streak_ = 0;
    return Hold(decision, "the current split " + best + " is the best for the measured speeds (" +
                              Ms(decision.predicted_current_iteration_ms) + " per iteration)");
  }
  const bool left = WasLeft(decision.new_counts);
  const double base = left ? options_.return_factor * options_.threshold : options_.threshold;
  const double noise = options_.noise_margin * decision.speed_standard_error;
  const double required = base + noise;
  decision.required_gain = required;
  const double reference =
      std::min(decision.predicted_current_iteration_ms, decision.measured_current_iteration_ms);
  const double gain = 1.0 - decision.predicted_new_iteration_ms / reference;
  const std::string figures =
      "split " + best + " predicts " + Ms(decision.predicted_new_iteration_ms) +
      " per iteration vs " + Ms(decision.predicted_current_iteration_ms) + " predicted, " +
      Ms(decision.measured_current_iteration_ms) + " measured (" + Percent(gain) + " shorter";
  if (!(gain >= required)) {
    confirm_streak_ = 0;
    return Hold(decision, figures + ", below the " + Percent(required) +
                              " required: " + (left ? "a split left before needs " : "threshold ") +
                              Percent(base) + " + noise " + Percent(noise) + ")");
  }
  // Confirmation counts windows in a row in which some move beats the required gain; the move
  // taken is this window's winner (noise and settling averages may shift it a layer a window).
  ++confirm_streak_;
  if (confirm_streak_ < options_.confirm_windows) {
    return Hold(decision, figures + "), confirming: " + std::to_string(confirm_streak_) + " of " +
                              std::to_string(options_.confirm_windows) + " windows");
  }
  decision.move = true;
  decision.reason =
      "move: " + CountsText(counts_) + " -> " + figures + ", threshold " + Percent(required) + ")";
  return decision;
}

void Rebalancer::Applied(const RebalanceDecision& decision) {
  if (decision.new_counts.size() != counts_.size() || decision.new_counts == counts_) return;
  left_splits_.push_back(counts_);
  counts_ = decision.new_counts;
  measured_sum_ms_.assign(counts_.size(), 0.0);
  windows_under_split_ = 0;
  confirm_streak_ = 0;
  ++moves_;
}

}  // namespace hetrun::pipeline

// The `hetrun simulate` engine: true times, seeded noise, the real controller and baselines.
#include "hetrun/tuner/simulator.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "hetrun/tuner/random.h"

namespace hetrun::tuner {
namespace {

// How one policy splits one stage's batch. Observe() gets each iteration's measured time per
// rank; EndWindow() may change the split for the next window.
class StagePolicy {
 public:
  virtual ~StagePolicy() = default;
  virtual const std::vector<int64_t>& shares() const = 0;
  virtual Status Observe(size_t rank, double measured_ms) = 0;
  virtual Status EndWindow() = 0;
};

// The controller the runtime uses: one RankObserver per rank, one ShareController for the group
// (on real ranks each rank holds a replica of it, fed the same all-gathered bytes).
class HetrunPolicy : public StagePolicy {
 public:
  HetrunPolicy(ShareController group, std::vector<int64_t> caps, CostModelOptions model)
      : group_(std::move(group)),
        caps_(std::move(caps)),
        observers_(caps_.size(), RankObserver(model)) {}
  const std::vector<int64_t>& shares() const override { return group_.shares(); }
  Status Observe(size_t rank, double measured_ms) override {
    return observers_[rank].Record(group_.shares()[rank], measured_ms);
  }
  Status EndWindow() override {
    std::vector<RankFit> gathered;
    gathered.reserve(observers_.size());
    for (size_t r = 0; r < observers_.size(); ++r) {
      gathered.push_back(observers_[r].CloseWindow(caps_[r], group_.shares()[r]));
    }
    return group_.Decide(gathered).status();
  }

 private:
  ShareController group_;
  std::vector<int64_t> caps_;
  std::vector<RankObserver> observers_;
};

class StaticPolicy : public StagePolicy {
 public:
  explicit StaticPolicy(std::vector<int64_t> shares) : shares_(std::move(shares)) {}
  const std::vector<int64_t>& shares() const override { return shares_; }
  Status Observe(size_t, double) override { return Status::Ok(); }
  Status EndWindow() override { return Status::Ok(); }

 private:
  std::vector<int64_t> shares_;
};

// LB-BSP-style baseline: each window, one sample moves from the rank with the slowest median
// measured time (among ranks holding samples) to the fastest (among ranks below their cap).
class LbbspPolicy : public StagePolicy {
 public:
  LbbspPolicy(std::vector<int64_t> shares, std::vector<int64_t> caps)
      : shares_(std::move(shares)), caps_(std::move(caps)), window_(shares_.size()) {}
  const std::vector<int64_t>& shares() const override { return shares_; }
  Status Observe(size_t rank, double measured_ms) override {
    window_[rank].push_back({shares_[rank], measured_ms});
    return Status::Ok();
  }
  Status EndWindow() override {
    std::vector<double> median(shares_.size(), 0);
    for (size_t r = 0; r < shares_.size(); ++r) {
      std::vector<WindowPoint> points = SummarizeWindow(window_[r]);
      median[r] = points.empty() ? 0 : points.back().median_ms;
      window_[r].clear();
    }
    size_t slow = shares_.size(), fast = shares_.size();
    for (size_t r = 0; r < shares_.size(); ++r) {
      if (shares_[r] > 0 && (slow == shares_.size() || median[r] > median[slow])) slow = r;
      if (shares_[r] < caps_[r] && (fast == shares_.size() || median[r] < median[fast])) fast = r;
    }
    if (slow < shares_.size() && fast < shares_.size() && slow != fast &&
        median[slow] > median[fast]) {
      --shares_[slow];
      ++shares_[fast];
    }
    return Status::Ok();
  }

 private:
  std::vector<int64_t> shares_;
  std::vector<int64_t> caps_;
  std::vector<std::vector<Observation>> window_;
};

// The exact split of `batch` for weights 1/speed[r] under caps: min-max with a = 0, c = 1/speed.
Result<std::vector<int64_t>> ProportionalShares(int64_t batch, const std::vector<double>& speed,
                                                const std::vector<int64_t>& caps) {
  std::vector<RankFit> fits;
  for (size_t r = 0; r < speed.size(); ++r) fits.push_back({0, 1.0 / speed[r], caps[r], 0});
  return SolveShares(batch, fits);
}

struct Policy {
  std::string name;
  std::vector<std::unique_ptr<StagePolicy>> stages;
  PolicyResult result;
  double window_ms = 0;
};

}  // namespace

void Summarize(const Scenario& scenario, PolicyResult& result) {
  const auto& w = result.windows;
  const int64_t count = static_cast<int64_t>(w.size());
  std::vector<int64_t> phase_starts = {0};
  for (const ScenarioEvent& e : scenario.events)
    phase_starts.push_back(e.iteration / scenario.window);
  result.convergence_by_phase.clear();
  result.convergence_windows = 0;
  for (size_t p = 0; p < phase_starts.size(); ++p) {
    int64_t start = phase_starts[p];
    int64_t end = count;
    for (size_t q = p + 1; q < phase_starts.size(); ++q) {
      if (phase_starts[q] > start) {
        end = phase_starts[q];
        break;
      }
    }
    int64_t found = -1;
    for (int64_t i = start; i < end; ++i) {
      if (w[static_cast<size_t>(i)].ratio <= kConvergedRatio) {
        found = i - start;
        break;
      }
    }
    // A phase cut short by the next event at its own window is not a failure to converge.
    if (found < 0 && end == start) found = 0;
    result.convergence_by_phase.push_back(found);
    if (found < 0 || result.convergence_windows < 0) {
      result.convergence_windows = -1;
    } else {
      result.convergence_windows = std::max(result.convergence_windows, found);
    }
  }
  int64_t first = result.convergence_by_phase[0] < 0 ? 0 : result.convergence_by_phase[0];
  double sum = 0;
  int64_t used = 0;
  for (int64_t i = first; i < count; ++i) {
    bool settling = false;
    for (size_t p = 1; p < phase_starts.size(); ++p) {
      settling = settling || (i >= phase_starts[p] && i < phase_starts[p] + kEventSettleWindows);
    }
    if (settling) continue;
    sum += w[static_cast<size_t>(i)].ratio;
    ++used;
  }
  if (used == 0) {
    for (const WindowRecord& r : w) sum += r.ratio;
    used = count;
  }
  result.steady_ratio = used > 0 ? sum / static_cast<double>(used) : 0;
  result.share_changes = 0;
  for (size_t i = 1; i < w.size(); ++i) result.share_changes += w[i].shares != w[i - 1].shares;
}

Result<SimulationResult> Simulate(const Scenario& scenario, ControllerOptions options) {
  options.window = scenario.window;
  HETRUN_RETURN_IF_ERROR(ValidateControllerOptions(options));
  const int64_t batch = scenario.global_batch;
  const size_t num_stages = scenario.stages.size();

  // Global rank layout and the baselines' starting points, per stage.
  std::vector<size_t> first_rank(num_stages, 0);
  std::vector<const ScenarioRank*> ranks;
  std::vector<Policy> policies(4);
  policies[0].name = "hetrun";
  policies[1].name = "uniform";
  policies[2].name = "static_datasheet";
  policies[3].name = "lbbsp";
  for (size_t s = 0; s < num_stages; ++s) {
    first_rank[s] = ranks.size();
    std::vector<int64_t> caps;
    std::vector<double> ones, tflops;
    for (const ScenarioRank& r : scenario.stages[s].ranks) {
      ranks.push_back(&r);
      caps.push_back(r.max_samples);
      ones.push_back(1.0);
      HETRUN_ASSIGN_OR_RETURN(double t, DatasheetTflops(r.family));
      tflops.push_back(t);
    }
    HETRUN_ASSIGN_OR_RETURN(std::vector<int64_t> uniform, ProportionalShares(batch, ones, caps));
    HETRUN_ASSIGN_OR_RETURN(std::vector<int64_t> datasheet,
                            ProportionalShares(batch, tflops, caps));
    HETRUN_ASSIGN_OR_RETURN(ShareController group,
                            ShareController::Create(options, batch, uniform));
    policies[0].stages.push_back(
        std::make_unique<HetrunPolicy>(std::move(group), caps, options.cost_model));
    policies[1].stages.push_back(std::make_unique<StaticPolicy>(uniform));
    policies[2].stages.push_back(std::make_unique<StaticPolicy>(datasheet));
    policies[3].stages.push_back(std::make_unique<LbbspPolicy>(uniform, caps));
  }
  const size_t total = ranks.size();

  std::vector<double> slowdown(total, 1.0);
  size_t next_event = 0;
  Random random(scenario.seed);
  std::vector<double> noise(total, 0);

  // The exact optimum for the current slowdowns (recomputed only when an event changes them).
  double optimal_ms = 0;
  auto compute_optimum = [&]() -> Status {
    optimal_ms = 0;
    for (size_t s = 0; s < num_stages; ++s) {
      std::vector<RankFit> truth;
      for (size_t r = 0; r < scenario.stages[s].ranks.size(); ++r) {
        const ScenarioRank& rank = scenario.stages[s].ranks[r];
        double k = slowdown[first_rank[s] + r];
        truth.push_back({rank.ms_fixed * k, rank.ms_per_sample * k, rank.max_samples, 0});
      }
      HETRUN_ASSIGN_OR_RETURN(std::vector<int64_t> best, SolveShares(batch, truth));
      optimal_ms = std::max(optimal_ms, PredictedIterationMs(truth, best));
    }
    return Status::Ok();
  };
  HETRUN_RETURN_IF_ERROR(compute_optimum());

  double window_optimal_ms = 0;
  int64_t in_window = 0;
  for (int64_t it = 0; it < scenario.iterations; ++it) {
    bool changed = false;
    while (next_event < scenario.events.size() && scenario.events[next_event].iteration == it) {
      const ScenarioEvent& e = scenario.events[next_event++];
      slowdown[static_cast<size_t>(e.rank)] = e.slowdown;
      changed = true;
    }
    if (changed) HETRUN_RETURN_IF_ERROR(compute_optimum());
    if (in_window == 0) {
      for (Policy& p : policies) {
        WindowRecord record;
        record.window = it / scenario.window;
        for (const auto& stage : p.stages) {
          record.shares.insert(record.shares.end(), stage->shares().begin(), stage->shares().end());
        }
        p.result.windows.push_back(std::move(record));
        p.window_ms = 0;
      }
      window_optimal_ms = 0;
    }
    for (double& z : noise) z = random.Normal();  // one draw per rank, shared by every policy
    for (Policy& p : policies) {
      double iteration_ms = 0;
      for (size_t s = 0; s < num_stages; ++s) {
        StagePolicy& stage = *p.stages[s];
        for (size_t r = 0; r < stage.shares().size(); ++r) {
          size_t g = first_rank[s] + r;
          RankFit truth{ranks[g]->ms_fixed * slowdown[g], ranks[g]->ms_per_sample * slowdown[g], 0,
                        0};
          double true_ms = PredictedMs(truth, stage.shares()[r]);
          iteration_ms = std::max(iteration_ms, true_ms);
          double measured = true_ms * std::max(0.01, 1 + scenario.noise * noise[g]);
          HETRUN_RETURN_IF_ERROR(stage.Observe(r, measured));
        }
      }
      p.window_ms += iteration_ms;
    }
    window_optimal_ms += optimal_ms;
    ++in_window;
    bool window_done = in_window == scenario.window || it + 1 == scenario.iterations;
    if (!window_done) continue;
    for (Policy& p : policies) {
      WindowRecord& record = p.result.windows.back();
      record.iteration_ms = p.window_ms / static_cast<double>(in_window);
      record.optimal_ms = window_optimal_ms / static_cast<double>(in_window);
      record.ratio = record.iteration_ms / record.optimal_ms;
      if (in_window == scenario.window) {
        for (auto& stage : p.stages) HETRUN_RETURN_IF_ERROR(stage->EndWindow());
      }
    }
    in_window = 0;
  }

  SimulationResult out;
  for (Policy& p : policies) {
    p.result.name = p.name;
    Summarize(scenario, p.result);
  }
  out.hetrun = std::move(policies[0].result);
  for (size_t i = 1; i < policies.size(); ++i)
    out.baselines.push_back(std::move(policies[i].result));
  const std::vector<int64_t>& final_shares = out.hetrun.windows.back().shares;
  for (size_t g = 0; g < total; ++g) {
    if (ranks[g]->max_micro_batch > 0) {
      HETRUN_ASSIGN_OR_RETURN(MicroBatchPlan plan,
                              PlanMicroBatches(final_shares[g], ranks[g]->max_micro_batch));
      out.micro_batches.push_back(plan);
    } else {
      out.micro_batches.push_back(MicroBatchPlan{});
    }
  }
  return out;
}

}  // namespace hetrun::tuner

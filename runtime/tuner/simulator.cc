// The `hetrun simulate` engine: true times, seeded noise, the real controller and baselines.
#include "hetrun/tuner/simulator.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "hetrun/tuner/random.h"
#include "hetrun/tuner/stage_policy.h"
#include "hetrun/tuner/true_optimum.h"

namespace hetrun::tuner {
namespace {

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
  result.steady_share_changes = 0;
  result.steady_windows = 0;
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
    // Stability: the windows after the tuner settled (kEventSettleWindows past convergence).
    if (i < first + kEventSettleWindows) continue;
    ++result.steady_windows;
    if (w[static_cast<size_t>(i)].shares != w[static_cast<size_t>(i - 1)].shares) {
      ++result.steady_share_changes;
    }
  }
  if (used == 0) {
    for (const WindowRecord& r : w) sum += r.ratio;
    used = count;
  }
  result.steady_ratio = used > 0 ? sum / static_cast<double>(used) : 0;
  result.share_changes = 0;
  for (size_t i = 1; i < w.size(); ++i) result.share_changes += w[i].shares != w[i - 1].shares;
}

namespace {

// One run: every policy over the same iterations, the same noise and spike draws.
class Simulation {
 public:
  Simulation(const Scenario& scenario, ControllerOptions options, FailSlowOptions fail_slow)
      : s_(scenario),
        options_(options),
        fail_slow_options_(fail_slow),
        noise_rng_(scenario.seed),
        spike_rng_(~scenario.seed) {}

  Status Init();
  Status Run();
  SimulationResult Finish();

 private:
  Status ComputeOptimum();
  Status ApplyEvents(int64_t iteration, size_t& next_event);
  void StartWindow(int64_t iteration);
  Status Iterate();
  Status FinishWindow(int64_t in_window);
  Status DetectFailSlow(int64_t window);
  int64_t StageMicroBatches(size_t stage, const std::vector<int64_t>& shares) const;

  const Scenario& s_;
  ControllerOptions options_;
  FailSlowOptions fail_slow_options_;
  std::vector<FailSlowDetector> detectors_;  // per stage, over hetrun's fits
  std::vector<FailSlowReport> fail_slow_;
  std::vector<size_t> first_rank_;  // per stage, its first global rank
  std::vector<const ScenarioRank*> ranks_;
  std::vector<Policy> policies_;
  std::vector<double> slowdown_;
  std::vector<double> measured_factor_;  // this iteration's noise x spike factor per rank
  Random noise_rng_;
  Random spike_rng_;
  double optimal_ms_ = 0;
  double window_optimal_ms_ = 0;
};

Status Simulation::Init() {
  for (const char* name : {"hetrun", "uniform", "static_datasheet", "proportional", "lbb"}) {
    policies_.push_back(Policy{name, {}, {}, 0});
  }
  const int64_t batch = s_.global_batch;
  for (const ScenarioStage& stage : s_.stages) {
    first_rank_.push_back(ranks_.size());
    std::vector<int64_t> caps;
    std::vector<double> ones, tflops, startup;
    std::vector<int32_t> families;
    for (const ScenarioRank& r : stage.ranks) {
      families.push_back(FamilyPoolKey(r.PeerModel()));
      ranks_.push_back(&r);
      caps.push_back(r.max_samples);
      ones.push_back(1.0);
      HETRUN_ASSIGN_OR_RETURN(double t, DatasheetTflops(r.family));
      tflops.push_back(t);
      startup.push_back(r.TrueMs(0));
    }
    HETRUN_ASSIGN_OR_RETURN(std::vector<int64_t> uniform, ProportionalShares(batch, ones, caps));
    HETRUN_ASSIGN_OR_RETURN(std::vector<int64_t> datasheet,
                            ProportionalShares(batch, tflops, caps));
    HETRUN_ASSIGN_OR_RETURN(ShareController group,
                            ShareController::Create(options_, batch, uniform));
    policies_[0].stages.push_back(
        MakeHetrunPolicy(std::move(group), caps, options_.cost_model, families));
    policies_[1].stages.push_back(MakeStaticPolicy(uniform));
    policies_[2].stages.push_back(MakeStaticPolicy(datasheet));
    policies_[3].stages.push_back(MakeProportionalPolicy(uniform, caps));
    policies_[4].stages.push_back(MakeLbbPolicy(uniform, caps, startup));
    HETRUN_ASSIGN_OR_RETURN(FailSlowDetector detector,
                            FailSlowDetector::Create(fail_slow_options_));
    detectors_.push_back(std::move(detector));
  }
  slowdown_.assign(ranks_.size(), 1.0);
  measured_factor_.assign(ranks_.size(), 1.0);
  return ComputeOptimum();
}

// The exact optimum for the current slowdowns: the slowest stage's min-max.
Status Simulation::ComputeOptimum() {
  optimal_ms_ = 0;
  for (size_t st = 0; st < s_.stages.size(); ++st) {
    std::vector<TrueRank> truth;
    for (size_t r = 0; r < s_.stages[st].ranks.size(); ++r) {
      const ScenarioRank& rank = s_.stages[st].ranks[r];
      truth.push_back({&rank, slowdown_[first_rank_[st] + r], rank.max_samples});
    }
    HETRUN_ASSIGN_OR_RETURN(double best,
                            OptimalIterationMsWithMicroBatches(s_.global_batch, truth));
    optimal_ms_ = std::max(optimal_ms_, best);
  }
  return Status::Ok();
}

// The stage-wide micro-batch count of a split: max over its ranks of ceil(n / max_micro_batch).
int64_t Simulation::StageMicroBatches(size_t stage, const std::vector<int64_t>& shares) const {
  int64_t count = 0;
  for (size_t r = 0; r < shares.size(); ++r) {
    count = std::max(count, ranks_[first_rank_[stage] + r]->MicroBatches(shares[r]));
  }
  return count;
}

Status Simulation::ApplyEvents(int64_t iteration, size_t& next_event) {
  bool changed = false;
  while (next_event < s_.events.size() && s_.events[next_event].iteration == iteration) {
    const ScenarioEvent& e = s_.events[next_event++];
    slowdown_[static_cast<size_t>(e.rank)] = e.slowdown;
    changed = true;
  }
  return changed ? ComputeOptimum() : Status::Ok();
}

void Simulation::StartWindow(int64_t iteration) {
  for (Policy& p : policies_) {
    WindowRecord record;
    record.window = iteration / s_.window;
    for (const auto& stage : p.stages) {
      record.shares.insert(record.shares.end(), stage->shares().begin(), stage->shares().end());
    }
    p.result.windows.push_back(std::move(record));
    p.window_ms = 0;
  }
  window_optimal_ms_ = 0;
}

// One iteration of every policy. Noise and spikes disturb the measured times only: the
// iteration's true time (and the optimum) never sees them.
Status Simulation::Iterate() {
  const bool spikes = s_.spikes.probability > 0;
  for (double& f : measured_factor_) {
    f = std::max(0.01, 1 + s_.noise * noise_rng_.Normal());  // one draw per rank for all
  }
  if (spikes) {
    for (double& f : measured_factor_) {
      if (spike_rng_.Uniform() < s_.spikes.probability) f *= s_.spikes.factor;
    }
  }
  for (Policy& p : policies_) {
    double iteration_ms = 0;
    for (size_t st = 0; st < s_.stages.size(); ++st) {
      StagePolicy& stage = *p.stages[st];
      const double count = static_cast<double>(StageMicroBatches(st, stage.shares()));
      for (size_t r = 0; r < stage.shares().size(); ++r) {
        size_t g = first_rank_[st] + r;
        const double micro_ms = ranks_[g]->ms_per_micro_batch * count;
        double true_ms = slowdown_[g] * (ranks_[g]->TrueMs(stage.shares()[r]) + micro_ms);
        iteration_ms = std::max(iteration_ms, true_ms);
        HETRUN_RETURN_IF_ERROR(stage.Observe(r, true_ms * measured_factor_[g]));
      }
      HETRUN_RETURN_IF_ERROR(stage.EndIteration());
    }
    p.window_ms += iteration_ms;
  }
  window_optimal_ms_ += optimal_ms_;
  return Status::Ok();
}

Status Simulation::FinishWindow(int64_t in_window) {
  for (Policy& p : policies_) {
    WindowRecord& record = p.result.windows.back();
    record.iteration_ms = p.window_ms / static_cast<double>(in_window);
    record.optimal_ms = window_optimal_ms_ / static_cast<double>(in_window);
    record.ratio = record.iteration_ms / record.optimal_ms;
    if (in_window == s_.window) {
      for (auto& stage : p.stages) HETRUN_RETURN_IF_ERROR(stage->EndWindow());
    }
  }
  if (in_window == s_.window) {
    HETRUN_RETURN_IF_ERROR(DetectFailSlow(policies_[0].result.windows.back().window));
  }
  return Status::Ok();
}

// The detector over hetrun's records of each stage, as every rank of the stage runs it.
Status Simulation::DetectFailSlow(int64_t window) {
  for (size_t st = 0; st < s_.stages.size(); ++st) {
    std::span<const RankFit> fits = policies_[0].stages[st]->last_fits();
    std::vector<std::string> models;
    for (const ScenarioRank& r : s_.stages[st].ranks) models.push_back(r.PeerModel());
    HETRUN_ASSIGN_OR_RETURN(std::vector<FailSlowVerdict> verdicts,
                            detectors_[st].Update(models, fits));
    for (size_t r = 0; r < verdicts.size(); ++r) {
      if (!verdicts[r].reported) continue;
      const ScenarioRank& rank = s_.stages[st].ranks[r];
      fail_slow_.push_back({window, static_cast<int64_t>(first_rank_[st] + r), rank.family,
                            rank.PeerModel(), verdicts[r]});
    }
  }
  return Status::Ok();
}

Status Simulation::Run() {
  size_t next_event = 0;
  int64_t in_window = 0;
  for (int64_t it = 0; it < s_.iterations; ++it) {
    HETRUN_RETURN_IF_ERROR(ApplyEvents(it, next_event));
    if (in_window == 0) StartWindow(it);
    HETRUN_RETURN_IF_ERROR(Iterate());
    ++in_window;
    if (in_window == s_.window || it + 1 == s_.iterations) {
      HETRUN_RETURN_IF_ERROR(FinishWindow(in_window));
      in_window = 0;
    }
  }
  return Status::Ok();
}

SimulationResult Simulation::Finish() {
  SimulationResult out;
  out.fail_slow = std::move(fail_slow_);
  for (Policy& p : policies_) {
    p.result.name = p.name;
    Summarize(s_, p.result);
  }
  out.hetrun = std::move(policies_[0].result);
  for (size_t i = 1; i < policies_.size(); ++i) {
    out.baselines.push_back(std::move(policies_[i].result));
  }
  return out;
}

}  // namespace

Result<SimulationResult> Simulate(const Scenario& scenario, ControllerOptions options,
                                  FailSlowOptions fail_slow) {
  options.window = scenario.window;
  HETRUN_RETURN_IF_ERROR(ValidateControllerOptions(options));
  HETRUN_RETURN_IF_ERROR(ValidateFailSlowOptions(fail_slow));
  Simulation run(scenario, options, fail_slow);
  HETRUN_RETURN_IF_ERROR(run.Init());
  HETRUN_RETURN_IF_ERROR(run.Run());
  SimulationResult out = run.Finish();
  const std::vector<int64_t>& final_shares = out.hetrun.windows.back().shares;
  size_t g = 0;
  for (const ScenarioStage& stage : scenario.stages) {
    for (const ScenarioRank& rank : stage.ranks) {
      MicroBatchPlan plan;
      if (rank.max_micro_batch > 0) {
        HETRUN_ASSIGN_OR_RETURN(plan, PlanMicroBatches(final_shares[g], rank.max_micro_batch));
      }
      out.micro_batches.push_back(plan);
      ++g;
    }
  }
  return out;
}

}  // namespace hetrun::tuner

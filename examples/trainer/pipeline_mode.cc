#include "pipeline_mode.h"

#include <hetrun/exact_gradients.h>
#include <hetrun/pipeline/job_layout.h>
#include <hetrun/pipeline/layout_state.h>
#include <hetrun/pipeline/measurements.h>
#include <hetrun/pipeline/rebalance.h>
#include <hetrun/pipeline_executor.h>
#include <hetrun/runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <vector>

#include "stage_run.h"
#include "window_figures.h"

namespace {

int Fail(int code, const std::string& what) {
  std::fprintf(stderr, "hetrun_trainer: %s\n", what.c_str());
  return code;
}

TinyGpt MakeWholeModel(const PipelineFlags& flags) {
  torch::manual_seed(1234);  // identical initial weights in every process
  TinyGpt model(flags.model);
  if (flags.float64) model->to(torch::kFloat64);
  return model;
}

// The plan's layers against the model's: empty when they match, else the error naming both.
std::string CheckLayers(const hetrun::pipeline::JobLayout& layout,
                        const std::vector<std::string>& names) {
  const auto count = static_cast<int64_t>(names.size());
  if (layout.num_layers != count) {
    return "the plan has " + std::to_string(layout.num_layers) + " layers but the model has " +
           std::to_string(count) + " (embedding, --layers " + std::to_string(count - 2) +
           " blocks, head)";
  }
  for (size_t i = 0; i < layout.layer_names.size(); ++i) {
    if (layout.layer_names[i] != names[i]) {
      return "the plan's layer " + std::to_string(i) + " is '" + layout.layer_names[i] +
             "' but the model's is '" + names[i] + "'";
    }
  }
  return "";
}

std::string JoinLosses(const std::vector<double>& losses) {
  std::string out;
  char buf[64];
  for (size_t i = 0; i < losses.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%s%.9g", i ? "," : "", losses[i]);
    out += buf;
  }
  return out;
}

// One text file per layer, DIR/<layer name>.txt: every parameter value ("%.9g", float32 exact),
// one a line, in LayerParameters order, so any tool can compare two runs.
bool SaveLayers(TinyGpt& model, const std::string& dir, int64_t first, int64_t count) {
  std::vector<std::string> names = model->LayerNames();
  for (int64_t layer = first; layer < first + count; ++layer) {
    const std::string path = dir + "/" + names[static_cast<size_t>(layer)] + ".txt";
    std::ofstream out(path);
    for (const torch::Tensor& p : model->LayerParameters(layer)) {
      torch::Tensor flat = p.detach().to(torch::kCPU, torch::kFloat64).reshape({-1}).contiguous();
      const double* values = flat.data_ptr<double>();
      char buf[40];
      for (int64_t i = 0; i < flat.numel(); ++i) {
        std::snprintf(buf, sizeof(buf), "%.9g\n", values[i]);
        out << buf;
      }
    }
    if (!out) {
      std::fprintf(stderr, "hetrun_trainer: cannot write %s\n", path.c_str());
      return false;
    }
  }
  return true;
}

// Per stage, the slowest replica's compute ms per micro-batch (fwd + bwd), from every rank's
// figure: one all-reduce (MAX) over the world, after training.
std::vector<double> StageTimes(hetrun::Runtime& rt, const hetrun::pipeline::JobLayout& layout,
                               double my_ms_per_micro_batch) {
  torch::Tensor all = torch::zeros({rt.world_size()}, torch::kFloat64);
  all[rt.rank()] = my_ms_per_micro_batch;
  std::vector<torch::Tensor> buffer{all};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  rt.world().allreduce(buffer, options)->wait();
  std::vector<double> out;
  for (const auto& stage : layout.stages) {
    double slowest = 0;
    for (int r : stage.ranks) slowest = std::max(slowest, buffer[0][r].item<double>());
    out.push_back(slowest);
  }
  return out;
}

// The stage's tuner: per-stage windows over the measured compute (forward + backward).
struct StageTuner {
  hetrun::TunerLoop loop;
  int64_t samples = 0;  // this rank's samples in the running step
};

hetrun::Result<StageTuner> MakeStageTuner(hetrun::Runtime& rt, const PipelineFlags& flags,
                                          const hetrun::pipeline::JobLayout& layout) {
  hetrun::TunerLoopOptions options = flags.tuning;
  options.batch = flags.batch;
  options.max_micro_batch = flags.batch;
  options.tune = flags.tune;
  // Every micro-batch gives each replica at least the layout's minimum share.
  options.min_share = std::max<int64_t>(options.min_share, layout.micro_batches * layout.min_share);
  HETRUN_ASSIGN_OR_RETURN(hetrun::TunerLoop loop, hetrun::TunerLoop::Create(rt, options));
  return StageTuner{std::move(loop), 0};
}

struct Totals {
  double forward = 0, backward = 0, wait = 0, step = 0, share = 0;
  int64_t steps = 0;
};

std::string JoinCounts(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string JoinMs(const std::vector<double>& v, const char* format = "%.2f") {
  std::string s;
  char buf[48];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof(buf), format, v[i]);
    s += (i ? "," : "") + std::string(buf);
  }
  return s;
}

// Live layer moves: the decision, the figures the summary reports, and where the layout lives.
struct LiveMoves {
  std::optional<hetrun::pipeline::Rebalancer> rebalancer;  // empty with --no-rebalance
  std::vector<int64_t> split_first;
  int64_t moves = 0, bytes = 0, windows = 0;
  std::vector<double> pause_ms;
  std::vector<std::string> window_stage_ms;  // per window: per stage fwd+bwd ms per micro-batch
  std::vector<double> window_step_ms;
  std::string layout_path;  // HETRUN_PLAN, rewritten after each move by local rank 0
  std::string state_path;   // HETRUN_LAYOUT_STATE ("" when none), rewritten by global rank 0
  std::optional<hetrun::pipeline::MeasurementLog> log;  // this rank's measurements file
};

hetrun::Result<LiveMoves> MakeLiveMoves(const PipelineFlags& flags,
                                        const hetrun::pipeline::JobLayout& layout,
                                        const std::string& path) {
  LiveMoves live;
  live.split_first = SplitOf(layout);
  live.layout_path = path;
  for (const ForcedSplit& forced : flags.forced_splits) {
    HETRUN_RETURN_IF_ERROR(WithSplit(layout, forced.counts)
                               .status()
                               .WithContext("--force-split " + std::to_string(forced.step) + ":" +
                                            JoinCounts(forced.counts)));
  }
  if (!flags.rebalance) return live;
  hetrun::pipeline::RebalanceOptions options;
  options.threshold = flags.rebalance_threshold;
  auto rebalancer = hetrun::pipeline::Rebalancer::Create(layout, options);
  if (!rebalancer.ok()) return rebalancer.status().WithContext("--rebalance-threshold");
  live.rebalancer.emplace(std::move(*rebalancer));
  return live;
}

// Moves to `counts` on every rank, rewrites the layout file (local rank 0 of each node) and the
// layout state (global rank 0, with HETRUN_LAYOUT_STATE) and returns the log text of the move.
hetrun::Result<std::string> Move(hetrun::Runtime& rt, TinyGpt model, const PipelineFlags& flags,
                                 StageRun& run, LiveMoves& live,
                                 const std::vector<int64_t>& counts) {
  const std::vector<int64_t> before = SplitOf(run.layout);
  HETRUN_ASSIGN_OR_RETURN(MoveFigures moved, MoveStage(rt, model, flags, run, counts));
  HETRUN_RETURN_IF_ERROR(hetrun::pipeline::WriteMovedLayout(
      run.layout, live.layout_path, live.state_path, rt.rank(), rt.identity().local_rank));
  ++live.moves;
  live.bytes += moved.report.bytes;
  live.pause_ms.push_back(moved.pause_ms);
  char buf[160];
  std::snprintf(buf, sizeof(buf), " (%zu layer%s, %lld transfers, %.1f KiB), pause %.1f ms",
                moved.report.layers.size(), moved.report.layers.size() == 1 ? "" : "s",
                static_cast<long long>(moved.report.transfers),
                static_cast<double>(moved.report.bytes) / 1024.0, moved.pause_ms);
  return JoinCounts(before) + " -> " + JoinCounts(counts) + ", layers " +
         JoinCounts(moved.report.layers) + buf + ", layout revision " +
         std::to_string(run.layout.revision);
}

// A window boundary: the figures of every stage, the decision, maybe a move; rank 0 logs it.
hetrun::Status EndWindow(hetrun::Runtime& rt, TinyGpt model, const PipelineFlags& flags,
                         StageRun& run, LiveMoves& live, const WindowFigures& w) {
  const std::string split = JoinCounts(SplitOf(run.layout));  // the window's, before a move
  std::vector<double> stage_ms;
  for (const auto& m : w.stages) stage_ms.push_back(m.forward_ms + m.backward_ms);
  ++live.windows;
  live.window_stage_ms.push_back(JoinMs(stage_ms));
  live.window_step_ms.push_back(w.step_ms);
  std::string verdict;
  if (live.rebalancer) {
    hetrun::pipeline::RebalanceDecision d = live.rebalancer->Decide(w.stages);
    if (d.move) {
      HETRUN_ASSIGN_OR_RETURN(std::string text, Move(rt, model, flags, run, live, d.new_counts));
      live.rebalancer->Applied(d);
      char buf[96];
      std::snprintf(buf, sizeof(buf), ", predicted iteration %.1f -> %.1f ms",
                    d.predicted_current_iteration_ms, d.predicted_new_iteration_ms);
      verdict = "  move: " + text + buf + ", predicted stage ms " + JoinMs(d.predicted_new_ms);
    } else {
      verdict = "  " + d.reason;
    }
  }
  if (rt.rank() == 0) {
    std::printf("window %lld  split %s  stage ms %s  step ms %.1f%s\n",
                static_cast<long long>(live.windows), split.c_str(),
                live.window_stage_ms.back().c_str(), w.step_ms, verdict.c_str());
    std::fflush(stdout);
  }
  return hetrun::Status::Ok();
}

void WriteMoveSummary(std::ostream& out, const LiveMoves& live, const StageRun& run) {
  out << "split_first=" << JoinCounts(live.split_first)
      << "\nsplit_final=" << JoinCounts(SplitOf(run.layout)) << "\nmoves=" << live.moves
      << "\nmove_bytes=" << live.bytes << "\nmove_pause_ms=" << JoinMs(live.pause_ms, "%.3f")
      << "\nlayout_revision=" << run.layout.revision
      << "\nwindow_step_ms=" << JoinMs(live.window_step_ms, "%.3f") << "\nwindow_stage_ms=";
  for (size_t i = 0; i < live.window_stage_ms.size(); ++i) {
    out << (i ? ";" : "") << live.window_stage_ms[i];
  }
  out << "\n";
}

void Report(hetrun::Runtime& rt, const StageRun& run, const PipelineFlags& flags, const Totals& t,
            const std::vector<double>& losses, const std::vector<std::vector<double>>& shares,
            const LiveMoves& live) {
  const auto& layout = run.layout;
  const double m = static_cast<double>(layout.micro_batches);
  const double n = static_cast<double>(std::max<int64_t>(t.steps, 1));
  std::vector<double> tau = StageTimes(rt, layout, (t.forward + t.backward) / n / m);
  double sum = 0, slowest = 0;
  for (double x : tau) sum += x, slowest = std::max(slowest, x);
  const double predicted = sum + (m - 1) * slowest;
  const double step_ms = std::max(t.step / n, 1e-9);
  const double stages = static_cast<double>(tau.size());
  std::printf(
      "rank %d stage %d: forward %.2f ms, backward %.2f ms per micro-batch, wait %.2f ms "
      "per step\n",
      rt.rank(), run.exec->stage(), t.forward / n / m, t.backward / n / m, t.wait / n);
  std::fflush(stdout);
  if (rt.rank() != 0) return;
  const double bubble = 1 - m * sum / (stages * step_ms);
  const double predicted_bubble = 1 - m * sum / (stages * predicted);
  std::printf(
      "pipeline: step %.1f ms (1F1B prediction %.1f ms), bubble %.1f%% (predicted %.1f%%), "
      "%.1f samples/s, final loss %.4f, split %s -> %s in %lld moves\n",
      step_ms, predicted, 100 * bubble, 100 * predicted_bubble,
      1000.0 * static_cast<double>(flags.batch) / step_ms, losses.back(),
      JoinCounts(live.split_first).c_str(), JoinCounts(SplitOf(layout)).c_str(),
      static_cast<long long>(live.moves));
  if (flags.summary.empty()) return;
  std::ofstream out(flags.summary);
  out << "losses=" << JoinLosses(losses) << "\nstep_ms=" << step_ms
      << "\npredicted_step_ms=" << predicted << "\nbubble_fraction=" << bubble
      << "\npredicted_bubble_fraction=" << predicted_bubble
      << "\nsamples_per_s=" << 1000.0 * static_cast<double>(flags.batch) / step_ms
      << "\nstage_ms=" << JoinMs(tau, "%.6f") << "\nshares=";
  for (size_t s = 0; s < shares.size(); ++s) {  // the tuner's last shares: stages ';'
    for (size_t r = 0; r < shares[s].size(); ++r) out << (r ? "," : (s ? ";" : "")) << shares[s][r];
  }
  out << "\n";
  WriteMoveSummary(out, live, run);
}

// The split --force-split asks for after `step`, or nullptr.
const std::vector<int64_t>* ForcedAfter(const PipelineFlags& flags, int64_t step) {
  for (const ForcedSplit& forced : flags.forced_splits) {
    if (forced.step == step) return &forced.counts;
  }
  return nullptr;
}

// What one rank's training loop carries from step to step.
struct Training {
  StageRun run;
  StageTuner tuner;
  LiveMoves live;
  WindowSums window;
  Totals totals, before_move;  // totals since the last move (the report's split), and before it
  std::vector<double> losses;
  std::vector<std::vector<double>> shares;  // empty: the plan's
};

// After step `step`: the tuner's window (shares, measurements, maybe a move), then a forced
// split. Returns the exit code on failure, 0 otherwise.
int AfterStep(hetrun::Runtime& rt, TinyGpt model, const PipelineFlags& flags, Training& t,
              int64_t step, const hetrun::PipelineStepFigures& figures) {
  std::vector<hetrun::StepMeasurement> measured{
      {t.run.exec->samples(), figures.forward_ms + figures.backward_ms}};
  auto report = t.tuner.loop.EndIteration(measured, figures.step_ms, figures.wait_ms);
  if (!report.ok()) return Fail(75, report.status().ToString());
  const int64_t moves = t.live.moves;
  if (report->has_value()) {  // every rank at the same step: windows count the same steps
    auto w = GatherWindow(rt, t.run, static_cast<double>(t.tuner.loop.local_share()), t.window);
    if (!w.ok()) return Fail(75, w.status().ToString());
    t.shares = w->shares;
    w->mine.window = t.live.windows;
    w->mine.revision = t.run.layout.revision;
    if (hetrun::Status s = t.live.log->Append(w->mine); !s.ok()) {  // training goes on
      std::fprintf(stderr, "hetrun_trainer: measurements: %s\n", s.ToString().c_str());
    }
    if (hetrun::Status s = EndWindow(rt, model, flags, t.run, t.live, *w); !s.ok()) {
      return Fail(s.code() == hetrun::StatusCode::kUnavailable ? 75 : 70, s.ToString());
    }
  }
  if (const std::vector<int64_t>* counts = ForcedAfter(flags, step)) {
    auto text = Move(rt, model, flags, t.run, t.live, *counts);
    if (!text.ok()) {
      return Fail(text.status().code() == hetrun::StatusCode::kUnavailable ? 75 : 70,
                  text.status().ToString());
    }
    if (t.live.rebalancer) {
      hetrun::pipeline::RebalanceDecision forced;
      forced.move = true;
      forced.current_counts = t.live.rebalancer->current_counts();
      forced.new_counts = *counts;
      t.live.rebalancer->Applied(forced);
    }
    if (rt.rank() == 0) {
      std::printf("step %lld  forced move: %s\n", static_cast<long long>(step), text->c_str());
      std::fflush(stdout);
    }
    t.window = WindowSums{};  // the window's figures so far were of the old split
    t.run.clock->Reset();
  }
  if (t.live.moves != moves && t.totals.steps > 0) {
    t.before_move = t.totals;
    t.totals = Totals{};
  }
  return 0;
}

}  // namespace

int RunPipelineStage(const PipelineFlags& flags, const hetrun::Environment& env) {
  const std::string path = env.Get("HETRUN_PLAN").value_or("");
  auto layout = hetrun::pipeline::LoadJobLayout(path);
  if (!layout.ok()) return Fail(78, "HETRUN_PLAN: " + layout.status().ToString());
  TinyGpt model = MakeWholeModel(flags);
  if (std::string bad = CheckLayers(*layout, model->LayerNames()); !bad.empty()) {
    return Fail(78, "HETRUN_PLAN=" + path + ": " + bad);
  }
  auto live = MakeLiveMoves(flags, *layout, path);
  if (!live.ok()) return Fail(64, live.status().ToString());
  live->state_path = env.Get("HETRUN_LAYOUT_STATE").value_or("");
  auto runtime = hetrun::Runtime::FromEnv(env);
  if (!runtime.ok()) return Fail(78, runtime.status().ToString());
  hetrun::Runtime& rt = **runtime;
  auto log = hetrun::pipeline::MeasurementLog::FromEnvironment(env, *layout, rt.rank());
  if (!log.ok()) return Fail(78, log.status().ToString());
  live->log.emplace(std::move(*log));
  auto run = BuildStageRun(rt, model, flags, *layout);
  if (!run.ok()) return Fail(78, run.status().ToString());
  auto tuner = MakeStageTuner(rt, flags, *layout);
  if (!tuner.ok()) return Fail(64, tuner.status().ToString());
  Training t{std::move(*run), std::move(*tuner), std::move(*live), {}, {}, {}, {}, {}};
  for (int64_t step = 0; step < flags.steps; ++step) {
    t.run.optimizer->zero_grad();
    auto figures = t.run.exec->Step(step, t.shares);
    if (!figures.ok()) return Fail(75, figures.status().ToString());
    t.run.optimizer->step();
    t.losses.push_back(figures->loss);
    if (step >= flags.tuning.warmup) t.window.Add(*figures, t.run.exec->samples());
    if (step > 0 || flags.steps == 1) {  // the first step carries lazy initialisation
      t.totals.forward += figures->forward_ms;
      t.totals.backward += figures->backward_ms;
      t.totals.wait += figures->wait_ms;
      t.totals.step += figures->step_ms;
      ++t.totals.steps;
    }
    if (int code = AfterStep(rt, model, flags, t, step, *figures); code != 0) return code;
  }
  Report(rt, t.run, flags, t.totals.steps > 0 ? t.totals : t.before_move, t.losses, t.shares,
         t.live);
  if (!flags.save_params.empty() && rt.data_parallel_rank() == 0 &&
      !SaveLayers(model, flags.save_params, t.run.first, t.run.count)) {
    return 78;
  }
  return 0;
}

int RunReference(const PipelineFlags& flags) {
  TinyGpt model = MakeWholeModel(flags);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(flags.lr));
  std::vector<double> losses;
  for (int64_t step = 0; step < flags.steps; ++step) {
    optimizer.zero_grad();
    auto [tokens, targets] = SyntheticSamples(flags.model, step, 0, flags.batch);
    torch::Tensor loss =
        hetrun::GlobalBatchLoss(model->PerSampleLoss(tokens, targets), flags.batch);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  std::printf("reference: %lld steps, final loss %.4f\n", static_cast<long long>(flags.steps),
              losses.back());
  if (!flags.summary.empty()) {
    std::ofstream out(flags.summary);
    out << "losses=" << JoinLosses(losses) << "\n";
  }
  const int64_t layers = static_cast<int64_t>(model->LayerNames().size());
  if (!flags.save_params.empty() && !SaveLayers(model, flags.save_params, 0, layers)) return 78;
  return 0;
}

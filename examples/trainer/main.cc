// hetrun_trainer: heterogeneous data-parallel training of a tiny GPT with the hetrun runtime,
// written to be copied: options, setup, the training loop and the report, top to bottom.
// Each rank's share of the global batch comes from the tuner (tuner_loop.h); gradients are exact
// for any split (exact_gradients.h) and all-reduced in buckets while backward runs
// (gradient_reducer.h). Rank 0 logs one line per window (with the efficiency against
// the ideal split) and, with --summary FILE, writes key=value figures for scripts/demo.
//
//   hetrun_trainer [--steps N] [--window W] [--warmup N] [--batch B] [--micro-batch M]
//                  [--min-share N] [--dead-band X] [--min-spread X] [--forgetting X]
//                  [--change-floor X] [--no-tune] [--bucket-mib N]
//                  [--seq N] [--dim N] [--layers N] [--lr X] [--summary FILE]
//                  [--reference] [--save-params DIR] [--double]
//                  [--rebalance | --no-rebalance] [--rebalance-threshold X]
//                  [--force-split STEP:N,N,...]...
//
// With HETRUN_PLAN set (`hetrun run --plan`), the trainer runs as its pipeline stage
// (pipeline_mode.h); --reference trains the whole model in one process on the same data. In a
// pipeline, --rebalance (the default) moves layers between stages at window boundaries when the
// measured stage times predict an iteration at least --rebalance-threshold (0.05) shorter;
// --force-split STEP:N,N,... moves to that split after step STEP (0-based) whatever the
// measurements say (deterministic tests; repeatable).
//
// Nothing but the step itself runs per step: the loss stays on the device until the window's
// end, the tuner's one all-gather runs once per window, and rank 0 prints once per window.
#include <hetrun/base/env.h>
#include <hetrun/base/units.h>
#include <hetrun/exact_gradients.h>
#include <hetrun/gradient_reducer.h>
#include <hetrun/runtime.h>
#include <hetrun/step_timer.h>
#include <hetrun/tuner_loop.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline_mode.h"
#include "tiny_gpt.h"

namespace {

// ---- Options -----------------------------------------------------------------------------

struct Flags {
  int64_t steps = 82;
  int64_t window = 10;
  int64_t warmup = 2;  // steps before the first window: lazy init and allocator growth
  int64_t batch = 192;
  int64_t micro_batch = 32;
  int64_t min_share = 1;    // every rank keeps computing, so every rank keeps measuring
  int64_t bucket_mib = 25;  // gradient bucket size, DDP's default
  // The tuner's own defaults (validated by `hetrun simulate`); the flags only override them.
  hetrun::tuner::ControllerOptions controller;
  bool tune = true;
  double lr = 3e-3;
  TinyGptConfig model;
  std::string summary;
  bool reference = false;
  bool float64 = false;
  std::string save_params;
  bool rebalance = true;
  double rebalance_threshold = 0.05;
  std::vector<ForcedSplit> forced_splits;
};

// "STEP:N,N,..." (every N >= 1).
bool ParseForcedSplit(const std::string& text, std::vector<ForcedSplit>* out) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  hetrun::Result<int64_t> step = hetrun::ParseIntInRange(text.substr(0, colon), 0, 1 << 30);
  if (!step.ok()) return false;
  ForcedSplit forced{*step, {}};
  std::stringstream counts(text.substr(colon + 1));
  for (std::string item; std::getline(counts, item, ',');) {
    hetrun::Result<int64_t> n = hetrun::ParseIntInRange(item, 1, 1 << 20);
    if (!n.ok()) return false;
    forced.counts.push_back(*n);
  }
  if (forced.counts.empty()) return false;
  out->push_back(std::move(forced));
  return true;
}

// The outputs' and the pipeline mode's flags that take a path, a split or nothing; false when
// `arg` is none of them or its value is missing or bad.
bool ParseOutputOrPipelineFlag(const std::string& arg, int argc, char** argv, int* i,
                               Flags* flags) {
  const bool has_value = *i + 1 < argc;
  if (arg == "--summary" && has_value) {
    flags->summary = argv[++*i];
  } else if (arg == "--save-params" && has_value) {
    flags->save_params = argv[++*i];
  } else if (arg == "--force-split" && has_value) {
    return ParseForcedSplit(argv[++*i], &flags->forced_splits);
  } else if (arg == "--reference") {
    flags->reference = true;
  } else if (arg == "--double") {
    flags->float64 = true;
  } else if (arg == "--rebalance") {
    flags->rebalance = true;
  } else if (arg == "--no-rebalance") {
    flags->rebalance = false;
  } else {
    return false;
  }
  return true;
}

bool ParseFlags(int argc, char** argv, Flags* flags, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](int64_t* out, int64_t min = 1) {
      if (i + 1 >= argc) return false;
      hetrun::Result<int64_t> v = hetrun::ParseIntInRange(argv[++i], min, 1 << 20);
      if (!v.ok()) return false;
      *out = *v;
      return true;
    };
    auto fraction = [&](double* out) {
      if (i + 1 >= argc) return false;
      hetrun::Result<double> v = hetrun::ParseDouble(argv[++i]);
      if (!v.ok() || !(*v >= 0 && *v <= 1)) return false;
      *out = *v;
      return true;
    };
    bool ok = true;
    if (arg == "--steps") {
      ok = value(&flags->steps);
    } else if (arg == "--window") {
      ok = value(&flags->window);
    } else if (arg == "--warmup") {
      ok = value(&flags->warmup, 0);
    } else if (arg == "--batch") {
      ok = value(&flags->batch);
    } else if (arg == "--min-share") {
      ok = value(&flags->min_share, 0);
    } else if (arg == "--dead-band") {
      ok = fraction(&flags->controller.dead_band);
    } else if (arg == "--min-spread") {
      ok = fraction(&flags->controller.cost_model.min_relative_spread);
    } else if (arg == "--change-floor") {
      ok = fraction(&flags->controller.cost_model.change_floor);
    } else if (arg == "--forgetting") {
      ok = fraction(&flags->controller.cost_model.forgetting) &&
           flags->controller.cost_model.forgetting > 0;
    } else if (arg == "--seq") {
      ok = value(&flags->model.seq);
    } else if (arg == "--dim") {
      ok = value(&flags->model.dim);
    } else if (arg == "--layers") {
      ok = value(&flags->model.layers);
    } else if (arg == "--bucket-mib") {
      ok = value(&flags->bucket_mib);
    } else if (arg == "--micro-batch") {
      ok = value(&flags->micro_batch);
    } else if (arg == "--no-tune") {
      flags->tune = false;
    } else if (arg == "--lr" && i + 1 < argc) {
      hetrun::Result<double> v = hetrun::ParseDouble(argv[++i]);
      ok = v.ok() && *v > 0;
      if (ok) flags->lr = *v;
    } else if (arg == "--rebalance-threshold") {
      ok = fraction(&flags->rebalance_threshold);
    } else {
      ok = ParseOutputOrPipelineFlag(arg, argc, argv, &i, flags);
    }
    if (!ok) {
      *error = "bad or incomplete flag '" + arg + "' (see the usage at the top of main.cc)";
      return false;
    }
  }
  if (flags->model.dim % flags->model.heads != 0) {
    *error = "--dim " + std::to_string(flags->model.dim) + " is not a multiple of the " +
             std::to_string(flags->model.heads) + " heads";
    return false;
  }
  return true;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// ---- Setup -------------------------------------------------------------------------------

// What one rank trains with.
struct Trainer {
  hetrun::Runtime& rt;
  TinyGpt model;
  torch::optim::AdamW optimizer;
  hetrun::TunerLoop loop;
  hetrun::StepTimer timer;
  std::vector<torch::Tensor> params;
  std::unique_ptr<hetrun::GradientReducer> reducer;
};

// A step's samples, already on the device.
struct Batch {
  torch::Tensor tokens, targets;
};

// The next step's samples, made on the host and moved outside the timed region; on GPU from
// pinned memory with a non-blocking copy, so the transfer overlaps whatever the GPU still runs.
Batch Prefetch(Trainer& t, const Flags& flags, int64_t step) {
  const std::vector<int64_t>& shares = t.loop.shares();
  int64_t offset = 0;
  for (int r = 0; r < t.rt.data_parallel_rank(); ++r) offset += shares[static_cast<size_t>(r)];
  auto [tokens, targets] = SyntheticSamples(flags.model, step, offset, t.loop.local_share());
  if (!t.rt.on_gpu()) return {tokens, targets};
  return {tokens.pin_memory().to(t.rt.device(), /*non_blocking=*/true),
          targets.pin_memory().to(t.rt.device(), /*non_blocking=*/true)};
}

TinyGpt MakeModel(const Flags& flags, const torch::Device& device) {
  torch::manual_seed(1234);  // identical initial weights on every rank
  TinyGpt model(flags.model);
  model->to(device);
  return model;
}

hetrun::TunerLoopOptions TuningOptions(const Flags& flags) {
  hetrun::TunerLoopOptions tuning;
  tuning.controller = flags.controller;
  tuning.controller.window = flags.window;
  tuning.batch = flags.batch;
  tuning.max_micro_batch = flags.micro_batch;
  tuning.tune = flags.tune;
  tuning.warmup = flags.warmup;
  tuning.min_share = flags.min_share;
  return tuning;
}

void PrintBanner(const Trainer& t, const Flags& flags) {
  int64_t count = 0;
  for (const torch::Tensor& p : t.params) count += p.numel();
  std::printf(
      "trainer: %d ranks, batch %lld, window %lld after %lld warm-up steps, %s; model %lld "
      "parameters, seq %lld\n",
      t.rt.world_size(), static_cast<long long>(flags.batch), static_cast<long long>(flags.window),
      static_cast<long long>(flags.warmup), flags.tune ? "tuner on" : "uniform shares (--no-tune)",
      static_cast<long long>(count), static_cast<long long>(flags.model.seq));
  std::fflush(stdout);
}

// ---- The training loop ----------------------------------------------------------------------

// Per-step figures that stay on the device until the window closes: no host sync per step.
struct DeviceSums {
  torch::Tensor loss;  // sum of the steps' global-batch losses
  torch::Tensor idle;  // sum of the steps' barrier idle fractions
  int64_t steps = 0;
};

// One step: this rank's share forward + backward (timed), with the gradient buckets all-reduced
// while backward runs; the last bucket also carries the loss and every rank's arrival time.
// Returns the step's wall time in ms (the wait is in the timer's measurement).
hetrun::Result<double> TrainStep(Trainer& t, const Flags& flags, int64_t step, const Batch& batch,
                                 DeviceSums& sums) {
  const auto step_start = std::chrono::steady_clock::now();
  const int64_t share = t.loop.local_share();
  const auto on_device = torch::TensorOptions(t.rt.device());
  const auto group = static_cast<int64_t>(t.rt.data_parallel_ranks().size());
  const int64_t slot = 1 + t.rt.data_parallel_rank();
  t.timer.StartStep(share);
  t.reducer->ZeroGrad();
  // The compute region ends when the last bucket is ready (its all-reduce starts right after):
  // the emulated slowdown's sleep is inside it, and the arrival rides in that bucket. Slot r + 1
  // of the extras holds rank r's arrival, the others 0, so the SUM hands every rank every
  // arrival: no extra collective, no host sync.
  bool stopped = false;
  t.reducer->set_on_last_bucket([&](torch::Tensor& extras) {
    if (share > 0) t.timer.StopCompute();
    stopped = true;
    extras[slot].fill_(t.timer.ArrivalMs());
  });
  torch::Tensor loss_sum = torch::zeros({1}, on_device);
  if (share > 0) {
    const int64_t micro = t.loop.local_micro_batches().balanced;
    t.timer.StartCompute();
    for (int64_t first = 0; first < share; first += micro) {
      int64_t n = std::min(micro, share - first);
      const bool last = first + n >= share;
      torch::Tensor per_sample = t.model->PerSampleLoss(batch.tokens.narrow(0, first, n),
                                                        batch.targets.narrow(0, first, n));
      torch::Tensor loss = hetrun::GlobalBatchLoss(per_sample, flags.batch);
      loss_sum += loss.detach();
      if (last) t.reducer->extras().narrow(0, 0, 1).copy_(loss_sum);
      t.reducer->PrepareBackward(/*communicate=*/last);
      loss.backward();
    }
  }
  // The wait: from the end of backward until every bucket's sum is in (a bucket an unused
  // parameter held back starts here, with the callback above).
  // Measured by the timer: on GPU on the stream (Finish() makes it wait for NCCL without
  // blocking the host), read a step late with the compute events.
  if (!stopped && share > 0) t.timer.StopCompute();
  t.timer.StartWait();
  HETRUN_RETURN_IF_ERROR(t.reducer->Finish());
  t.timer.StopWait();
  t.reducer->set_on_last_bucket(nullptr);
  t.optimizer.step();
  if (step >= flags.warmup) {
    // Barrier idle fraction of the step: sum_r (max_t - t_r) / (R max_t), t_r = arrivals.
    torch::Tensor arrivals = t.reducer->extras().narrow(0, 1, group);
    torch::Tensor slowest = arrivals.max().clamp_min(1e-9);
    sums.idle += (slowest - arrivals).sum() / (slowest * static_cast<double>(group));
    sums.loss += t.reducer->extras().narrow(0, 0, 1);
    ++sums.steps;
  }
  return Ms(std::chrono::steady_clock::now() - step_start);
}

// ---- The report -----------------------------------------------------------------------------

// Averages over the second half of the windows (the tuner has settled there), for --summary.
struct Summary {
  double first_loss = -1, last_loss = 0;
  double idle = 0, rate = 0, efficiency = 0, ideal_rate = 0, overhead = 0;
  int64_t tail_windows = 0, windows = 0;
};

void ReportWindow(const hetrun::WindowReport& w, const Flags& flags, bool leader, DeviceSums& sums,
                  Summary& summary) {
  std::string computes;
  for (size_t r = 0; r < w.ranks.size(); ++r) {
    computes += (r ? "," : "") + std::to_string(std::lround(w.ranks[r].compute_ms));
  }
  const double steps = static_cast<double>(std::max<int64_t>(sums.steps, 1));
  summary.last_loss = sums.loss.item<double>() / steps;
  const double idle = sums.idle.item<double>() / steps;
  if (summary.first_loss < 0) summary.first_loss = summary.last_loss;
  sums.loss.zero_();
  sums.idle.zero_();
  sums.steps = 0;
  ++summary.windows;
  // The tuner's boundary cost is the previous window's: the first window has none to report.
  if (w.window > 1) summary.overhead += w.overhead_fraction();
  if (w.window > (flags.steps - flags.warmup) / flags.window / 2) {
    summary.idle += idle;
    summary.rate += w.samples_per_s;
    summary.efficiency += w.efficiency;
    summary.ideal_rate += w.ideal_samples_per_s;
    ++summary.tail_windows;
  }
  if (!leader) return;
  std::printf(
      "window %2lld  shares %-20s  compute ms %-22s  efficiency %5.3f  %6.1f samples/s (ideal "
      "%6.1f)  idle %5.1f%%  loss %.3f  tuner %.3f%%%s\n",
      static_cast<long long>(w.window), Join(w.shares_used).c_str(), computes.c_str(), w.efficiency,
      w.samples_per_s, w.ideal_samples_per_s, 100 * idle, summary.last_loss,
      100 * w.overhead_fraction(),
      w.shares_next != w.shares_used ? ("  -> " + Join(w.shares_next)).c_str() : "");
  std::fflush(stdout);
}

bool WriteSummary(const std::string& path, const Summary& s, const std::vector<int64_t>& shares) {
  std::ofstream out(path);
  const double n = s.tail_windows > 0 ? static_cast<double>(s.tail_windows) : 1;
  const double overhead = s.windows > 1 ? s.overhead / static_cast<double>(s.windows - 1) : 0;
  out << "samples_per_s=" << s.rate / n << "\nideal_samples_per_s=" << s.ideal_rate / n
      << "\nefficiency=" << s.efficiency / n << "\nidle_fraction=" << s.idle / n
      << "\nloss_first=" << s.first_loss << "\nloss_last=" << s.last_loss
      << "\ntuner_overhead=" << overhead << "\nshares_final=" << Join(shares) << "\n";
  return static_cast<bool>(out);
}

int Fail(int code, const std::string& what) {
  std::fprintf(stderr, "hetrun_trainer: %s\n", what.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (std::string error; !ParseFlags(argc, argv, &flags, &error)) return Fail(64, error);
  torch::set_num_threads(1);  // 1 intra-op thread per worker: many workers share few cores
  hetrun::Environment env = hetrun::Environment::FromProcess();
  if (flags.reference || env.Get("HETRUN_PLAN")) {
    PipelineFlags pipeline{flags.steps,
                           flags.batch,
                           flags.lr,
                           flags.model,
                           flags.summary,
                           flags.float64,
                           flags.tune,
                           TuningOptions(flags),
                           flags.save_params,
                           flags.rebalance,
                           flags.rebalance_threshold,
                           flags.forced_splits};
    return flags.reference ? RunReference(pipeline) : RunPipelineStage(pipeline, env);
  }
  auto runtime = hetrun::Runtime::FromEnv(env);
  if (!runtime.ok()) return Fail(78, runtime.status().ToString());
  hetrun::Runtime& rt = **runtime;
  if (hetrun::Status s = rt.ApplyMemoryCeiling(env); !s.ok()) return Fail(81, s.ToString());
  auto loop = hetrun::TunerLoop::Create(rt, TuningOptions(flags));
  if (!loop.ok()) return Fail(64, loop.status().ToString());
  TinyGpt model = MakeModel(flags, rt.device());
  Trainer trainer{rt,
                  model,
                  torch::optim::AdamW(model->parameters(), torch::optim::AdamWOptions(flags.lr)),
                  std::move(*loop),
                  hetrun::StepTimer(rt.device(), rt.emulated_slowdown_schedule()),
                  model->parameters(),
                  nullptr};
  hetrun::GradientReducerOptions bucketing;
  bucketing.bucket_bytes = flags.bucket_mib << 20;
  bucketing.extras = 1 + static_cast<int64_t>(rt.data_parallel_ranks().size());
  auto reducer =
      hetrun::GradientReducer::Create(rt.data_parallel_group(), trainer.params, bucketing);
  if (!reducer.ok()) return Fail(64, reducer.status().ToString());
  trainer.reducer = std::move(*reducer);
  const bool leader = rt.rank() == 0;
  if (leader) PrintBanner(trainer, flags);

  const auto on_device = torch::TensorOptions(rt.device());
  DeviceSums sums{torch::zeros({1}, on_device), torch::zeros({1}, on_device), 0};
  Summary summary;
  Batch batch = Prefetch(trainer, flags, 0);
  for (int64_t step = 0; step < flags.steps; ++step) {
    auto times = TrainStep(trainer, flags, step, batch, sums);
    if (!times.ok()) return Fail(75, times.status().ToString());
    std::vector<hetrun::StepMeasurement> measured = trainer.timer.FinishStep();
    double wait_ms = 0;  // the steps whose figures are in (on GPU usually the previous one)
    for (const hetrun::StepMeasurement& m : measured) wait_ms += m.wait_ms;
    auto report = trainer.loop.EndIteration(measured, *times, wait_ms);
    if (!report.ok()) return Fail(75, report.status().ToString());
    if (report->has_value()) ReportWindow(**report, flags, leader, sums, summary);
    // After the window's decision: the next step's share is known.
    if (step + 1 < flags.steps) batch = Prefetch(trainer, flags, step + 1);
  }
  if (leader && !flags.summary.empty() &&
      !WriteSummary(flags.summary, summary, trainer.loop.shares())) {
    return Fail(78, "cannot write --summary " + flags.summary);
  }
  return 0;
}

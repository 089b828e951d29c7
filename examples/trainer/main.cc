// hetrun_trainer: heterogeneous data-parallel training of a tiny GPT with the hetrun runtime.
// Each rank's share of the global batch comes from the tuner (tuner_loop.h); gradients are exact
// for any split (exact_gradients.h). Rank 0 logs one line per window and, with --summary FILE,
// writes key=value figures for scripts/demo.
//
//   hetrun_trainer [--steps N] [--window W] [--warmup N] [--batch B] [--micro-batch M]
//                  [--min-share N] [--dead-band X] [--min-spread X] [--forgetting X]
//                  [--change-floor X] [--no-tune]
//                  [--seq N] [--dim N] [--layers N] [--lr X] [--summary FILE]
//
// Nothing but the step itself runs per step: the loss stays on the device until the window's
// end, the tuner's one all-gather runs once per window, and rank 0 prints once per window.
#include <hetrun/base/env.h>
#include <hetrun/base/units.h>
#include <hetrun/exact_gradients.h>
#include <hetrun/runtime.h>
#include <hetrun/step_timer.h>
#include <hetrun/tuner_loop.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tiny_gpt.h"

namespace {

struct Flags {
  int64_t steps = 82;
  int64_t window = 10;
  int64_t warmup = 2;  // steps before the first window: lazy init and allocator growth
  int64_t batch = 192;
  int64_t micro_batch = 32;
  int64_t min_share = 1;    // every rank keeps computing, so every rank keeps measuring
  double dead_band = 0.03;  // of the predicted step: below ~3x the noise of a window median here
  double min_spread = 0.3;  // see CostModelOptions::min_relative_spread
  double forgetting = 0.9;  // see CostModelOptions::forgetting
  // Smallest relative miss taken as a change of speed (CostModelOptions::change_floor). High
  // here: speeds do not jump on this machine, and the model's change test also fires when a
  // least-squares line is extrapolated to a new sample count and misses, which then rescales a
  // noisy line through one point (seen in this demo: a slow rank handed 11 of 96 samples).
  double change_floor = 0.5;
  bool tune = true;
  double lr = 3e-3;
  TinyGptConfig model;
  std::string summary;
};

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
      ok = fraction(&flags->dead_band);
    } else if (arg == "--min-spread") {
      ok = fraction(&flags->min_spread);
    } else if (arg == "--change-floor") {
      ok = fraction(&flags->change_floor);
    } else if (arg == "--forgetting") {
      ok = fraction(&flags->forgetting) && flags->forgetting > 0;
    } else if (arg == "--seq") {
      ok = value(&flags->model.seq);
    } else if (arg == "--dim") {
      ok = value(&flags->model.dim);
    } else if (arg == "--layers") {
      ok = value(&flags->model.layers);
    } else if (arg == "--micro-batch") {
      ok = value(&flags->micro_batch);
    } else if (arg == "--no-tune") {
      flags->tune = false;
    } else if (arg == "--lr" && i + 1 < argc) {
      hetrun::Result<double> v = hetrun::ParseDouble(argv[++i]);
      ok = v.ok() && *v > 0;
      if (ok) flags->lr = *v;
    } else if (arg == "--summary" && i + 1 < argc) {
      flags->summary = argv[++i];
    } else {
      ok = false;
    }
    if (!ok) {
      *error = "bad or incomplete flag '" + arg + "' (see the usage at the top of main.cc)";
      return false;
    }
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

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, &flags, &error)) {
    std::fprintf(stderr, "hetrun_trainer: %s\n", error.c_str());
    return 64;
  }
  if (flags.model.dim % flags.model.heads != 0) {
    std::fprintf(stderr, "hetrun_trainer: --dim %lld is not a multiple of the %lld heads\n",
                 static_cast<long long>(flags.model.dim),
                 static_cast<long long>(flags.model.heads));
    return 64;
  }
  torch::set_num_threads(1);  // 1 intra-op thread per worker: many workers share few cores
  hetrun::Environment env = hetrun::Environment::FromProcess();
  auto runtime_or = hetrun::Runtime::FromEnv(env);
  if (!runtime_or.ok()) {
    std::fprintf(stderr, "hetrun_trainer: %s\n", runtime_or.status().ToString().c_str());
    return 78;
  }
  hetrun::Runtime& rt = **runtime_or;
  if (hetrun::Status s = rt.ApplyMemoryCeiling(env); !s.ok()) {
    std::fprintf(stderr, "hetrun_trainer: %s\n", s.ToString().c_str());
    return 81;
  }

  torch::manual_seed(1234);  // identical initial weights on every rank
  const TinyGptConfig& config = flags.model;
  TinyGpt model(config);
  model->to(rt.device());
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(flags.lr));

  hetrun::TunerLoopOptions tuning;
  tuning.controller.window = flags.window;
  tuning.controller.dead_band = flags.dead_band;
  tuning.controller.cost_model.min_relative_spread = flags.min_spread;
  tuning.controller.cost_model.forgetting = flags.forgetting;
  tuning.controller.cost_model.change_floor = flags.change_floor;
  tuning.batch = flags.batch;
  tuning.max_micro_batch = flags.micro_batch;
  tuning.tune = flags.tune;
  tuning.warmup = flags.warmup;
  tuning.min_share = flags.min_share;
  auto loop_or = hetrun::TunerLoop::Create(rt, tuning);
  if (!loop_or.ok()) {
    std::fprintf(stderr, "hetrun_trainer: %s\n", loop_or.status().ToString().c_str());
    return 64;
  }
  hetrun::TunerLoop& loop = *loop_or;
  hetrun::StepTimer timer(rt.device(), rt.emulated_slowdown());
  const bool leader = rt.rank() == 0;
  std::vector<torch::Tensor> params = model->parameters();
  if (leader) {
    int64_t count = 0;
    for (const torch::Tensor& p : params) count += p.numel();
    std::printf(
        "trainer: %d ranks, batch %lld, window %lld after %lld warm-up steps, %s; model %lld "
        "parameters, seq %lld\n",
        rt.world_size(), static_cast<long long>(flags.batch), static_cast<long long>(flags.window),
        static_cast<long long>(flags.warmup),
        flags.tune ? "tuner on" : "uniform shares (--no-tune)", static_cast<long long>(count),
        static_cast<long long>(config.seq));
    std::fflush(stdout);
  }

  // Figures of the second half of the windows (the tuner has settled there), for --summary.
  double first_loss = -1, last_loss = 0;
  double idle_sum = 0, rate_sum = 0, overhead_sum = 0;
  int64_t tail_windows = 0, all_windows = 0;
  const int64_t windows = (flags.steps - flags.warmup) / flags.window;
  // The loss stays on the device until the window closes: no host sync per step.
  // So do the per-step barrier idle fractions (see below).
  const auto on_device = torch::TensorOptions(rt.device());
  torch::Tensor loss_acc = torch::zeros({1}, on_device);
  torch::Tensor idle_acc = torch::zeros({1}, on_device);
  int64_t loss_steps = 0;
  const int64_t group_size = static_cast<int64_t>(rt.data_parallel_ranks().size());
  for (int64_t step = 0; step < flags.steps; ++step) {
    auto step_start = std::chrono::steady_clock::now();
    const int64_t share = loop.local_share();
    int64_t offset = 0;
    const std::vector<int64_t>& shares = loop.shares();
    for (int r = 0; r < rt.data_parallel_rank(); ++r) offset += shares[static_cast<size_t>(r)];
    timer.StartStep(share);
    // Data loading is outside the compute region.
    auto [tokens, targets] = SyntheticSamples(config, step, offset, share);
    tokens = tokens.to(rt.device());
    targets = targets.to(rt.device());
    optimizer.zero_grad();
    torch::Tensor loss_sum = torch::zeros({1}, torch::TensorOptions(rt.device()));
    if (share > 0) {
      const int64_t micro = loop.local_micro_batches().balanced;
      timer.StartCompute();
      for (int64_t first = 0; first < share; first += micro) {
        int64_t n = std::min(micro, share - first);
        torch::Tensor per_sample =
            model->PerSampleLoss(tokens.narrow(0, first, n), targets.narrow(0, first, n));
        torch::Tensor loss = hetrun::GlobalBatchLoss(per_sample, flags.batch);
        loss.backward();
        loss_sum += loss.detach();
      }
      timer.StopCompute();
    }
    // The wait: from arriving at the all-reduce until every rank's gradients are summed.
    auto wait_start = std::chrono::steady_clock::now();
    // The all-reduce also carries the loss and every rank's arrival time t_r (ms since its step
    // began): slot r holds rank r's, the others 0, so the SUM hands every rank every arrival
    // exactly. No extra collective, no host sync.
    torch::Tensor extras = torch::zeros({1 + group_size}, on_device);
    extras.narrow(0, 0, 1).copy_(loss_sum);
    extras[1 + rt.data_parallel_rank()].fill_(Ms(wait_start - step_start));
    if (hetrun::Status s = hetrun::AllReduceGradients(rt.data_parallel_group(), params, &extras);
        !s.ok()) {
      std::fprintf(stderr, "hetrun_trainer: %s\n", s.ToString().c_str());
      return 75;
    }
    double wait_ms = Ms(std::chrono::steady_clock::now() - wait_start);
    optimizer.step();
    if (step >= flags.warmup) {
      // Barrier idle fraction of the step: sum_r (max_t - t_r) / (R max_t), t_r = arrivals.
      torch::Tensor arrivals = extras.narrow(0, 1, group_size);
      torch::Tensor slowest = arrivals.max();
      idle_acc += (slowest - arrivals).sum() / (slowest * static_cast<double>(group_size));
      loss_acc += extras.narrow(0, 0, 1);
      ++loss_steps;
    }
    double step_ms = Ms(std::chrono::steady_clock::now() - step_start);
    auto report = loop.EndIteration(timer.FinishStep(), step_ms, wait_ms);
    if (!report.ok()) {
      std::fprintf(stderr, "hetrun_trainer: %s\n", report.status().ToString().c_str());
      return 75;
    }
    if (!report->has_value()) continue;
    const hetrun::WindowReport& w = **report;
    double step_max = 0;
    std::string computes, waits;
    for (size_t r = 0; r < w.ranks.size(); ++r) {
      step_max = std::max(step_max, w.ranks[r].step_ms);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.0f", r ? "," : "", w.ranks[r].compute_ms);
      computes += buf;
      std::snprintf(buf, sizeof buf, "%s%.0f", r ? "," : "", w.ranks[r].wait_ms);
      waits += buf;
    }
    double rate = step_max > 0 ? 1000.0 * static_cast<double>(flags.batch) / step_max : 0;
    // Tuner overhead: its cost per window over the window's time (= per step over the step);
    // the boundary part is the previous window's, so the first window has none to report.
    double overhead = w.overhead_ms / (w.ranks[0].window_ms + w.overhead_ms);
    const double steps_in_window = static_cast<double>(std::max<int64_t>(loss_steps, 1));
    last_loss = loss_acc.item<double>() / steps_in_window;
    const double idle = idle_acc.item<double>() / steps_in_window;
    if (first_loss < 0) first_loss = last_loss;
    loss_acc.zero_();
    idle_acc.zero_();
    loss_steps = 0;
    ++all_windows;
    if (w.window > windows / 2) {
      idle_sum += idle;
      rate_sum += rate;
      ++tail_windows;
    }
    if (w.window > 1) overhead_sum += overhead;
    if (leader) {
      std::printf(
          "window %2lld  shares %-20s  compute ms %-26s  wait ms %-22s  step %5.0f ms  idle "
          "%5.1f%%  %5.1f samples/s  loss %.3f  tuner %.2f ms (%.3f%%)%s\n",
          static_cast<long long>(w.window), Join(w.shares_used).c_str(), computes.c_str(),
          waits.c_str(), step_max, 100 * idle, rate, last_loss, w.overhead_ms, 100 * overhead,
          w.shares_next != w.shares_used ? ("  -> " + Join(w.shares_next)).c_str() : "");
      std::fflush(stdout);
    }
  }
  if (leader && !flags.summary.empty()) {
    std::ofstream out(flags.summary);
    double n = tail_windows > 0 ? static_cast<double>(tail_windows) : 1;
    out << "samples_per_s=" << rate_sum / n << "\nidle_fraction=" << idle_sum / n
        << "\nloss_first=" << first_loss << "\nloss_last=" << last_loss << "\ntuner_overhead="
        << (all_windows > 1 ? overhead_sum / static_cast<double>(all_windows - 1) : 0)
        << "\nshares_final=" << Join(loop.shares()) << "\n";
    if (!out) {
      std::fprintf(stderr, "hetrun_trainer: cannot write --summary %s\n", flags.summary.c_str());
      return 78;
    }
  }
  return 0;
}

#include "pipeline_mode.h"

#include <hetrun/exact_gradients.h>
#include <hetrun/pipeline/job_layout.h>
#include <hetrun/pipeline_executor.h>
#include <hetrun/runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <vector>

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

// The stage's forward over its layer range [first, first + count).
hetrun::PipelineStage MakeStage(TinyGpt model, const PipelineFlags& flags, int64_t first,
                                int64_t count) {
  hetrun::PipelineStage stage;
  const int64_t head = flags.model.layers + 1;
  for (int64_t layer = first; layer < first + count; ++layer) {
    for (const torch::Tensor& p : model->LayerParameters(layer)) stage.parameters.push_back(p);
  }
  stage.forward = [model, flags, first, count, head](
                      const torch::Tensor& input, int64_t step,
                      const hetrun::pipeline::SampleRange& samples) mutable {
    auto [tokens, targets] = SyntheticSamples(flags.model, step, samples.begin, samples.size());
    torch::Tensor x = input;
    for (int64_t layer = first; layer < first + count; ++layer) {
      if (layer == 0) {
        x = model->Embed(tokens);
      } else if (layer == head) {
        x = model->HeadLoss(x, targets);
      } else {
        x = model->Block(layer - 1, x);
      }
    }
    return x;
  };
  stage.input_dtype = flags.float64 ? torch::kFloat64 : torch::kFloat32;
  stage.input_shape = [flags](int64_t n) {
    return std::vector<int64_t>{n, flags.model.seq, flags.model.dim};
  };
  return stage;
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

// Every rank's new share (samples of the step, from its stage's tuner), gathered across the
// world: the shares of every stage, which every rank needs to route (one all-gather per window).
hetrun::Result<std::vector<std::vector<double>>> GatherShares(
    hetrun::Runtime& rt, const hetrun::pipeline::JobLayout& layout, double mine) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(&mine), sizeof(mine));
  HETRUN_ASSIGN_OR_RETURN(std::vector<std::byte> all, rt.AllGatherBytes(rt.world(), bytes));
  std::vector<std::vector<double>> shares;
  for (const auto& stage : layout.stages) {
    shares.emplace_back();
    for (int r : stage.ranks) {
      double value = 0;
      std::memcpy(&value, all.data() + static_cast<size_t>(r) * sizeof(double), sizeof(double));
      shares.back().push_back(value);
    }
  }
  return shares;
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

void Report(hetrun::Runtime& rt, const hetrun::PipelineExecutor& exec, const PipelineFlags& flags,
            const Totals& t, const std::vector<double>& losses,
            const std::vector<std::vector<double>>& shares) {
  const auto& layout = exec.layout();
  const double m = static_cast<double>(layout.micro_batches);
  const double n = static_cast<double>(std::max<int64_t>(t.steps, 1));
  std::vector<double> tau = StageTimes(rt, layout, (t.forward + t.backward) / n / m);
  double sum = 0, slowest = 0;
  for (double x : tau) sum += x, slowest = std::max(slowest, x);
  const double predicted = sum + (m - 1) * slowest;
  const double step_ms = t.step / n;
  const double stages = static_cast<double>(tau.size());
  std::printf(
      "rank %d stage %d: forward %.2f ms, backward %.2f ms per micro-batch, wait %.2f ms "
      "per step\n",
      rt.rank(), exec.stage(), t.forward / n / m, t.backward / n / m, t.wait / n);
  std::fflush(stdout);
  if (rt.rank() != 0) return;
  const double bubble = 1 - m * sum / (stages * step_ms);
  const double predicted_bubble = 1 - m * sum / (stages * predicted);
  std::printf(
      "pipeline: step %.1f ms (1F1B prediction %.1f ms), bubble %.1f%% (predicted %.1f%%), "
      "%.1f samples/s, final loss %.4f\n",
      step_ms, predicted, 100 * bubble, 100 * predicted_bubble,
      1000.0 * static_cast<double>(flags.batch) / step_ms, losses.back());
  if (flags.summary.empty()) return;
  std::ofstream out(flags.summary);
  std::string stage_ms;
  for (size_t s = 0; s < tau.size(); ++s) stage_ms += (s ? "," : "") + std::to_string(tau[s]);
  out << "losses=" << JoinLosses(losses) << "\nstep_ms=" << step_ms
      << "\npredicted_step_ms=" << predicted << "\nbubble_fraction=" << bubble
      << "\npredicted_bubble_fraction=" << predicted_bubble
      << "\nsamples_per_s=" << 1000.0 * static_cast<double>(flags.batch) / step_ms
      << "\nstage_ms=" << stage_ms << "\nshares=";
  for (size_t s = 0; s < shares.size(); ++s) {  // the tuner's last shares: stages ';'
    for (size_t r = 0; r < shares[s].size(); ++r) out << (r ? "," : (s ? ";" : "")) << shares[s][r];
  }
  out << "\n";
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
  auto runtime = hetrun::Runtime::FromEnv(env);
  if (!runtime.ok()) return Fail(78, runtime.status().ToString());
  hetrun::Runtime& rt = **runtime;
  const auto& entry = layout->stages[static_cast<size_t>(layout->StageOf(rt.rank()))];
  hetrun::PipelineStage stage = MakeStage(model, flags, entry.first_layer, entry.layers);
  torch::optim::AdamW optimizer(stage.parameters, torch::optim::AdamWOptions(flags.lr));
  auto exec = hetrun::PipelineExecutor::Create(rt, *layout, stage, flags.batch);
  if (!exec.ok()) return Fail(78, exec.status().ToString());
  auto tuner = MakeStageTuner(rt, flags, *layout);
  if (!tuner.ok()) return Fail(64, tuner.status().ToString());
  std::vector<double> losses;
  Totals totals;
  std::vector<std::vector<double>> shares;  // empty: the plan's
  for (int64_t step = 0; step < flags.steps; ++step) {
    optimizer.zero_grad();
    auto figures = (*exec)->Step(step, shares);
    if (!figures.ok()) return Fail(75, figures.status().ToString());
    optimizer.step();
    losses.push_back(figures->loss);
    std::vector<hetrun::StepMeasurement> measured{
        {(*exec)->samples(), figures->forward_ms + figures->backward_ms}};
    auto report = tuner->loop.EndIteration(measured, figures->step_ms, figures->wait_ms);
    if (!report.ok()) return Fail(75, report.status().ToString());
    if (report->has_value()) {  // every rank at the same step: windows count the same steps
      auto gathered = GatherShares(rt, *layout, static_cast<double>(tuner->loop.local_share()));
      if (!gathered.ok()) return Fail(75, gathered.status().ToString());
      shares = *gathered;
    }
    if (step == 0 && flags.steps > 1) continue;  // the first step carries lazy initialisation
    totals.forward += figures->forward_ms;
    totals.backward += figures->backward_ms;
    totals.wait += figures->wait_ms;
    totals.step += figures->step_ms;
    totals.share = static_cast<double>((*exec)->samples());
    ++totals.steps;
  }
  Report(rt, **exec, flags, totals, losses, shares);
  if (!flags.save_params.empty() && rt.data_parallel_rank() == 0 &&
      !SaveLayers(model, flags.save_params, entry.first_layer, entry.layers)) {
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

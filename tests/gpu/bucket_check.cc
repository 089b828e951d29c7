// tests/gpu: the bucketed gradient all-reduce over NCCL on one rank (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT from the environment). A small MLP on the GPU: the plain backward's
// gradients, then the same backward through GradientReducer with 64 KiB buckets; on one rank the
// SUM all-reduce is the identity, so the gradients must be equal and every bucket must complete.
// Also times the compute region with StepTimer's CUDA events, stopped when the last bucket is
// ready (the trainer's figure). Prints key=value lines for tests/gpu/run.sh.
// Exit: 0 equal gradients and every bucket completed, 1 a wrong result, 2 set-up failure.
//
//   gpu_bucket_check [STEPS]
#include <hetrun/base/env.h>
#include <hetrun/exact_gradients.h>
#include <hetrun/gradient_reducer.h>
#include <hetrun/runtime.h>
#include <hetrun/step_timer.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  auto rt_or = hetrun::Runtime::FromEnv(hetrun::Environment::FromProcess());
  if (!rt_or.ok()) {
    std::fprintf(stderr, "gpu_bucket_check: %s\n", rt_or.status().ToString().c_str());
    return 2;
  }
  hetrun::Runtime& rt = **rt_or;
  std::printf("backend=%s\n", rt.backend_name().c_str());
  torch::manual_seed(5);
  auto model = torch::nn::Sequential(torch::nn::Linear(256, 1024), torch::nn::ReLU(),
                                     torch::nn::Linear(1024, 1024), torch::nn::ReLU(),
                                     torch::nn::Linear(1024, 16));
  model->to(rt.device());
  torch::Tensor x = torch::randn({64, 256}, torch::TensorOptions(rt.device()));
  torch::Tensor y = torch::randn({64, 16}, torch::TensorOptions(rt.device()));
  auto loss = [&] { return hetrun::GlobalBatchLoss((model->forward(x) - y).pow(2).mean({1}), 64); };
  loss().backward();
  std::vector<torch::Tensor> expected;
  for (const torch::Tensor& p : model->parameters()) expected.push_back(p.grad().clone());
  hetrun::GradientReducerOptions options;
  options.bucket_bytes = 64 << 10;
  auto reducer =
      hetrun::GradientReducer::Create(rt.data_parallel_group(), model->parameters(), options);
  if (!reducer.ok()) {
    std::fprintf(stderr, "gpu_bucket_check: %s\n", reducer.status().ToString().c_str());
    return 2;
  }
  hetrun::StepTimer timer(rt.device(), 1.0);
  (*reducer)->set_on_last_bucket([&](torch::Tensor&) { timer.StopCompute(); });
  double worst = 0, compute_ms = 0;
  int64_t hook_started = 0, measured = 0;
  for (int step = 0; step < steps; ++step) {
    timer.StartStep(64);
    (*reducer)->ZeroGrad();
    timer.StartCompute();
    loss().backward();
    hook_started = (*reducer)->started_by_hooks();
    if (hetrun::Status s = (*reducer)->Finish(); !s.ok()) {
      std::fprintf(stderr, "gpu_bucket_check: %s\n", s.ToString().c_str());
      return 1;
    }
    for (const hetrun::StepMeasurement& m : timer.FinishStep()) {
      compute_ms += m.compute_ms;
      ++measured;
    }
    std::vector<torch::Tensor> params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      worst = std::max(worst, (params[i].grad() - expected[i]).abs().max().item<double>());
    }
  }
  torch::cuda::synchronize();
  for (const hetrun::StepMeasurement& m : timer.FinishStep()) {
    compute_ms += m.compute_ms;
    ++measured;
  }
  std::printf("buckets=%lld\nstarted_by_hooks=%lld\nmax_abs_diff=%.3g\n",
              static_cast<long long>((*reducer)->bucket_count()),
              static_cast<long long>(hook_started), worst);
  std::printf("event_compute_ms_mean=%.4f\nmeasured_steps=%lld\n",
              measured ? compute_ms / static_cast<double>(measured) : 0.0,
              static_cast<long long>(measured));
  const bool ok = worst <= 1e-6 && hook_started == (*reducer)->bucket_count() && measured == steps;
  return ok ? 0 : 1;
}

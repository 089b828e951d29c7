// One rank of bench/ddp_compare.sh, hetrun's side: the example trainer's TinyGpt trained with
// GradientReducer (bucketed all-reduce overlapped with backward) over Gloo, SGD, fixed equal
// shares. Started with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT like its Python twin
// (bench/ddp_compare_ddp.py). Prints one line per rank:
//   "ddp-compare-rank R step_ms MEDIAN added_kib K buckets N grad_mib G"
// step_ms: median wall time of the timed steps (forward + backward + Finish + optimizer step);
// added_kib: what the gradient exchange adds to plain training's peak: the peak resident memory
// (VmHWM) of the distributed steps minus that of one plain step on the bare model (forward,
// backward, SGD step, gradients freed) taken first; the peak is reset in between
// (/proc/self/clear_refs 5).
//   ddp_compare_worker STEPS WARMUP BATCH_PER_RANK DIM LAYERS SEQ BUCKET_MIB
#include <hetrun/exact_gradients.h>
#include <hetrun/gradient_reducer.h>
#include <hetrun/runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tiny_gpt.h"

namespace {

// A field of /proc/self/status in KiB (VmRSS, VmHWM).
long long StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "ddp_compare_worker: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) return Fail("usage: STEPS WARMUP BATCH_PER_RANK DIM LAYERS SEQ BUCKET_MIB");
  const int steps = std::atoi(argv[1]), warmup = std::atoi(argv[2]);
  const int64_t per_rank = std::atoll(argv[3]);
  TinyGptConfig config;
  config.dim = std::atoll(argv[4]);
  config.layers = std::atoll(argv[5]);
  config.seq = std::atoll(argv[6]);
  const int64_t bucket_mib = std::atoll(argv[7]);
  torch::set_num_threads(1);
  auto rt_or = hetrun::Runtime::FromEnv(hetrun::Environment::FromProcess());
  if (!rt_or.ok()) return Fail(rt_or.status().ToString());
  hetrun::Runtime& rt = **rt_or;
  torch::manual_seed(1234);
  TinyGpt model(config);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(1e-3));
  const int64_t batch = per_rank * rt.world_size();
  {
    auto [tokens, targets] = SyntheticSamples(config, 0, rt.rank() * per_rank, per_rank);
    hetrun::GlobalBatchLoss(model->PerSampleLoss(tokens, targets), batch).backward();
    optimizer.step();
    optimizer.zero_grad(/*set_to_none=*/true);
  }
  const long long before_kib = StatusKib("VmHWM");
  std::ofstream("/proc/self/clear_refs") << "5";
  hetrun::GradientReducerOptions options;
  options.bucket_bytes = bucket_mib << 20;
  auto reducer =
      hetrun::GradientReducer::Create(rt.data_parallel_group(), model->parameters(), options);
  if (!reducer.ok()) return Fail(reducer.status().ToString());
  std::vector<double> times;
  for (int step = 0; step < steps; ++step) {
    auto [tokens, targets] = SyntheticSamples(config, step, rt.rank() * per_rank, per_rank);
    const auto start = std::chrono::steady_clock::now();
    (*reducer)->ZeroGrad();
    hetrun::GlobalBatchLoss(model->PerSampleLoss(tokens, targets), batch).backward();
    if (hetrun::Status s = (*reducer)->Finish(); !s.ok()) return Fail(s.ToString());
    optimizer.step();
    if (step >= warmup) {
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  std::sort(times.begin(), times.end());
  std::printf("ddp-compare-rank %d step_ms %.2f added_kib %lld buckets %lld grad_mib %.1f\n",
              rt.rank(), times.empty() ? 0.0 : times[times.size() / 2],
              StatusKib("VmHWM") - before_kib, static_cast<long long>((*reducer)->bucket_count()),
              static_cast<double>((*reducer)->buffer_bytes()) / (1 << 20));
  return 0;
}

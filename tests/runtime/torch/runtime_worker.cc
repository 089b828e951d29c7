// A worker process for the multi-process runtime tests (spawned by runtime_test.cc with RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT). Modes:
//   gradients [BUCKET_BYTES]
//              shares 1/2/3/10 of B = 16 (4 ranks): prints the max |difference| between the
//              all-reduced gradient (GradientReducer, buckets of BUCKET_BYTES, default 25 MiB)
//              and one process's gradient on the same 16 samples, for a 2-layer MLP and a
//              transformer block: "max_abs_diff mlp=X transformer=Y".
//   accumulate [BUCKET_BYTES]
//              shares 0/3/5/8 of B = 16 (4 ranks) in micro-batches of 2, a parameter no rank
//              uses, set_to_none zero_grad between two steps: "max_abs_diff X early_starts N
//              hook_starts H buckets K" (N: buckets started during non-last micro-batches).
//   gather     3 windows of the tuner loop with fixed per-rank inputs: prints, per window, a hash
//              of the gathered bytes and the next split: "window W bytes=H shares=a,b,c".
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "hetrun/exact_gradients.h"
#include "hetrun/gradient_reducer.h"
#include "hetrun/runtime.h"
#include "hetrun/tuner_loop.h"

namespace {

double MaxAbsDiff(torch::nn::Module& split, torch::nn::Module& whole) {
  double worst = 0;
  auto a = split.parameters();
  auto b = whole.parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i].grad() - b[i].grad()).abs().max().item<double>());
  }
  return worst;
}

int64_t g_bucket_bytes = int64_t{25} << 20;

std::unique_ptr<hetrun::GradientReducer> MakeReducer(hetrun::Runtime& rt,
                                                     std::vector<torch::Tensor> parameters) {
  hetrun::GradientReducerOptions options;
  options.bucket_bytes = g_bucket_bytes;
  auto reducer = hetrun::GradientReducer::Create(rt.data_parallel_group(), parameters, options);
  if (!reducer.ok()) {
    std::fprintf(stderr, "%s\n", reducer.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*reducer);
}

void FinishOrExit(hetrun::GradientReducer& reducer) {
  hetrun::Status s = reducer.Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
}

template <typename MakeModel, typename PerSample>
double GradientCase(hetrun::Runtime& rt, MakeModel make, PerSample per_sample,
                    const torch::Tensor& x, const torch::Tensor& y) {
  const int64_t shares[] = {1, 2, 3, 10};
  int64_t first = 0;
  for (int r = 0; r < rt.rank(); ++r) first += shares[r];
  const int64_t n = shares[rt.rank()];
  auto split = make();
  auto whole = make();
  auto reducer = MakeReducer(rt, split->parameters());
  torch::Tensor local = per_sample(split, x.narrow(0, first, n), y.narrow(0, first, n));
  hetrun::GlobalBatchLoss(local, 16).backward();
  FinishOrExit(*reducer);
  per_sample(whole, x, y).mean().backward();  // one process, the whole batch, mean loss
  return MaxAbsDiff(*split, *whole);
}

// Two steps of gradient accumulation with unequal shares (one of them 0), an unused parameter,
// and a set_to_none zero_grad in between; the second step's gradient is compared.
int Accumulate(hetrun::Runtime& rt) {
  const int64_t shares[] = {0, 3, 5, 8};
  int64_t first = 0;
  for (int r = 0; r < rt.rank(); ++r) first += shares[r];
  const int64_t n = shares[rt.rank()];
  torch::manual_seed(7);
  torch::Tensor x = torch::randn({16, 6});
  torch::Tensor y = torch::randn({16, 3});
  auto make = [] {
    torch::manual_seed(3);
    return torch::nn::Sequential(torch::nn::Linear(6, 12), torch::nn::Tanh(),
                                 torch::nn::Linear(12, 3));
  };
  auto split = make();
  auto whole = make();
  torch::Tensor unused = torch::ones({5}, torch::requires_grad());
  std::vector<torch::Tensor> params = split->parameters();
  params.insert(params.begin() + 2, unused);
  auto reducer = MakeReducer(rt, params);
  int64_t early = 0;
  for (int step = 0; step < 2; ++step) {
    if (step == 0) {
      reducer->ZeroGrad();
    } else {
      for (torch::Tensor& p : params) p.mutable_grad() = torch::Tensor();  // set_to_none
    }
    for (int64_t m = 0; m < n; m += 2) {
      const bool last = m + 2 >= n;
      reducer->PrepareBackward(last);
      torch::Tensor out = split->forward(x.narrow(0, first + m, std::min<int64_t>(2, n - m)));
      torch::Tensor target = y.narrow(0, first + m, std::min<int64_t>(2, n - m));
      hetrun::GlobalBatchLoss((out - target).pow(2).mean({1}), 16).backward();
      if (!last) early += reducer->started_by_hooks();
    }
    FinishOrExit(*reducer);
  }
  (whole->forward(x) - y).pow(2).mean({1}).mean().backward();
  double worst = MaxAbsDiff(*split, *whole);
  worst = std::max(worst, unused.grad().abs().max().item<double>());
  std::printf("max_abs_diff %.3g early_starts %lld hook_starts %lld buckets %lld\n", worst,
              static_cast<long long>(early), static_cast<long long>(reducer->started_by_hooks()),
              static_cast<long long>(reducer->bucket_count()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  std::string mode = argc > 1 ? argv[1] : "";
  auto rt_or = hetrun::Runtime::FromEnv(hetrun::Environment::FromProcess());
  if (!rt_or.ok()) {
    std::fprintf(stderr, "%s\n", rt_or.status().ToString().c_str());
    return 1;
  }
  hetrun::Runtime& rt = **rt_or;
  if (argc > 2) g_bucket_bytes = std::atoll(argv[2]);
  if (mode == "accumulate") return Accumulate(rt);
  if (mode == "gradients") {
    torch::manual_seed(7);
    torch::Tensor x = torch::randn({16, 8, 16});
    torch::Tensor y = torch::randn({16, 8, 16});
    double mlp = GradientCase(
        rt,
        [] {
          torch::manual_seed(1);
          return torch::nn::Sequential(torch::nn::Linear(16, 32), torch::nn::Tanh(),
                                       torch::nn::Linear(32, 16));
        },
        [](torch::nn::Sequential& m, const torch::Tensor& in, const torch::Tensor& out) {
          return (m->forward(in) - out).pow(2).mean({1, 2});
        },
        x, y);
    double block = GradientCase(
        rt,
        [] {
          torch::manual_seed(2);
          return torch::nn::TransformerEncoderLayer(
              torch::nn::TransformerEncoderLayerOptions(16, 2).dim_feedforward(32).dropout(0.0));
        },
        [](torch::nn::TransformerEncoderLayer& m, const torch::Tensor& in,
           const torch::Tensor& out) {
          return (m->forward(in.transpose(0, 1)).transpose(0, 1) - out).pow(2).mean({1, 2});
        },
        x, y);
    std::printf("max_abs_diff mlp=%.3g transformer=%.3g\n", mlp, block);
    return 0;
  }
  if (mode == "gather") {
    hetrun::TunerLoopOptions options;
    options.controller.window = 2;
    options.batch = 30;
    auto loop_or = hetrun::TunerLoop::Create(rt, options);
    if (!loop_or.ok()) return 1;
    hetrun::TunerLoop& loop = *loop_or;
    for (int step = 0; step < 6; ++step) {
      // Fixed inputs: rank r takes 2 + r ms fixed plus (r + 1) ms per sample.
      int64_t n = loop.local_share();
      double ms = 2.0 + rt.rank() + (rt.rank() + 1.0) * static_cast<double>(n);
      auto report = loop.EndIteration({{n, ms}}, ms, 0.0);
      if (!report.ok()) {
        std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
        return 1;
      }
      if (!report->has_value()) continue;
      const hetrun::WindowReport& w = **report;
      uint64_t hash = 1469598103934665603ull;  // FNV-1a of the gathered bytes
      const auto* bytes = reinterpret_cast<const unsigned char*>(w.ranks.data());
      for (size_t i = 0; i < w.ranks.size() * sizeof(hetrun::RankWindow); ++i) {
        hash = (hash ^ bytes[i]) * 1099511628211ull;
      }
      std::printf("window %lld bytes=%016llx shares=", static_cast<long long>(w.window),
                  static_cast<unsigned long long>(hash));
      for (size_t r = 0; r < w.shares_next.size(); ++r) {
        std::printf("%s%lld", r ? "," : "", static_cast<long long>(w.shares_next[r]));
      }
      std::printf("\n");
    }
    return 0;
  }
  std::fprintf(stderr, "usage: runtime_worker gradients|accumulate [BUCKET_BYTES] | gather\n");
  return 64;
}

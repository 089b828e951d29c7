// One SolveShares call (the decision every rank computes each window) at 8, 1024 and 16384
// ranks; three GPU speeds with fixed times, 64 samples per rank on average, caps not binding.
#include <benchmark/benchmark.h>

#include <vector>

#include "hetrun/tuner/random.h"
#include "hetrun/tuner/solver.h"

namespace {

void BM_SolveShares(benchmark::State& state) {
  const auto ranks = static_cast<size_t>(state.range(0));
  const int64_t batch = 64 * static_cast<int64_t>(ranks);
  hetrun::tuner::Random random(1);
  std::vector<hetrun::tuner::RankFit> fits(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    double base = r % 3 == 0 ? 0.40 : (r % 3 == 1 ? 1.0 : 0.85);
    fits[r] = {12.0 * (0.95 + 0.1 * random.Uniform()), base * (0.95 + 0.1 * random.Uniform()),
               batch, 0};
  }
  for (auto _ : state) {
    auto shares = hetrun::tuner::SolveShares(batch, fits);
    benchmark::DoNotOptimize(shares);
  }
  state.counters["ranks"] = static_cast<double>(ranks);
}
BENCHMARK(BM_SolveShares)->Arg(8)->Arg(1024)->Arg(16384)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

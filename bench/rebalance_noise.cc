// The re-balancer under measurement noise (docs/explanation/balancing.md): fixed true stage speeds
// 1.6,1.6,1,1 over 64 equal layers, M = 16, default options; every window's stage times carry a
// multiplicative noise (±10% uniform, or Gaussian σ 10%). For each start split and noise, runs
// `seeds` seeds × `windows` windows, applying every move, and prints how many runs made 0/1/2/3+
// moves, the mean window of the first move (counting from 1), and how many ended within 5% of the
// true optimum. Prints figures, asserts nothing. Usage: rebalance_noise [SEEDS [WINDOWS]].
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "hetrun/pipeline/rebalance.h"

namespace {

using hetrun::pipeline::JobLayout;
using hetrun::pipeline::Rebalancer;
using hetrun::pipeline::SpeedFit;
using hetrun::pipeline::StageMeasurement;

constexpr int64_t kMicro = 16;
const std::vector<double> kSpeeds = {1.6, 1.6, 1.0, 1.0};
const std::vector<double> kCosts(64, 1.0);

JobLayout Layout(const std::vector<int64_t>& counts) {
  JobLayout layout;
  layout.micro_batches = kMicro;
  int64_t first = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    layout.stages.push_back({first, counts[s], {static_cast<int>(s)}, {""}, {1.0}});
    first += counts[s];
  }
  layout.num_layers = first;
  return layout;
}

// One window's measurements of `counts` at the true speeds, each stage's time × (1 + noise).
std::vector<StageMeasurement> Window(const std::vector<int64_t>& counts, bool gaussian,
                                     std::mt19937& gen) {
  std::uniform_real_distribution<double> uniform(-0.10, 0.10);
  std::normal_distribution<double> normal(0.0, 0.10);
  std::vector<StageMeasurement> window;
  int64_t first = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    const double noise = gaussian ? normal(gen) : uniform(gen);
    const double t = static_cast<double>(counts[s]) / kSpeeds[s] * std::max(1.0 + noise, 0.05);
    window.push_back({first, counts[s], t / 3, 2 * t / 3, {}});
    first += counts[s];
  }
  return window;
}

double TrueIteration(const std::vector<int64_t>& counts) {
  auto plan = hetrun::pipeline::PlanFromFit(SpeedFit{kSpeeds, kCosts}, kMicro, counts);
  return plan.ok() ? plan->compared->iteration_time : -1;
}

double OptimumIteration() {
  auto plan = hetrun::pipeline::PlanFromFit(SpeedFit{kSpeeds, kCosts}, kMicro,
                                            std::vector<int64_t>{16, 16, 16, 16});
  return plan.ok() ? plan->best.iteration_time : -1;
}

struct Row {
  int moves[4] = {0, 0, 0, 0};  // 0, 1, 2, 3+
  double first_move_sum = 0;
  int first_moves = 0, near_optimum = 0;
};

Row Study(const std::vector<int64_t>& start, bool gaussian, int seeds, int windows) {
  Row row;
  const double optimum = OptimumIteration();
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937 gen(static_cast<unsigned>(seed));
    auto rebalancer = Rebalancer::Create(Layout(start), {});
    if (!rebalancer.ok()) {
      std::fprintf(stderr, "rebalance_noise: %s\n", rebalancer.status().message().c_str());
      std::exit(1);
    }
    for (int w = 1; w <= windows; ++w) {
      auto decision = rebalancer->Decide(Window(rebalancer->current_counts(), gaussian, gen));
      if (!decision.move) continue;
      if (rebalancer->moves() == 0) {
        row.first_move_sum += w;
        ++row.first_moves;
      }
      rebalancer->Applied(decision);
    }
    ++row.moves[std::min<int64_t>(rebalancer->moves(), 3)];
    if (TrueIteration(rebalancer->current_counts()) <= 1.05 * optimum) ++row.near_optimum;
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 200;
  const int windows = argc > 2 ? std::atoi(argv[2]) : 50;
  if (seeds < 1 || windows < 1) {
    std::fprintf(stderr, "usage: rebalance_noise [SEEDS >= 1 [WINDOWS >= 1]]\n");
    return 2;
  }
  std::printf("%d seeds x %d windows, true speeds 1.6,1.6,1,1, 64 layers, M = %lld, defaults\n",
              seeds, windows, static_cast<long long>(kMicro));
  std::printf("%-14s %-12s %5s %5s %5s %5s %12s %12s\n", "noise", "start", "0", "1", "2", "3+",
              "first move", "within 5%");
  for (bool gaussian : {false, true}) {
    for (const std::vector<int64_t>& start :
         {std::vector<int64_t>{16, 16, 16, 16}, std::vector<int64_t>{22, 22, 10, 10},
          std::vector<int64_t>{20, 20, 12, 12}}) {
      Row row = Study(start, gaussian, seeds, windows);
      char first[32] = "-";
      if (row.first_moves > 0) {
        std::snprintf(first, sizeof first, "%.2f", row.first_move_sum / row.first_moves);
      }
      std::printf("%-14s %-12s %5d %5d %5d %5d %12s %12d\n",
                  gaussian ? "gauss s=10%" : "uniform 10%",
                  hetrun::pipeline::CountsText(start).c_str(), row.moves[0], row.moves[1],
                  row.moves[2], row.moves[3], first, row.near_optimum);
    }
  }
  return 0;
}

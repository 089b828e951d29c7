#include "window_figures.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace {

// One rank's record: share, forward and backward ms per micro-batch slice, mean step ms, then
// one forward + backward ms per model layer (0 outside its stage).
constexpr size_t kFixed = 4;

std::vector<double> Record(const StageRun& run, double share, const WindowSums& sums) {
  const auto& layout = run.layout;
  std::vector<double> record(kFixed + static_cast<size_t>(layout.num_layers), 0.0);
  const double slices =
      static_cast<double>(std::max<int64_t>(sums.steps, 1) * layout.micro_batches);
  record[0] = share;
  record[1] = sums.forward_ms / slices;
  record[2] = sums.backward_ms / slices;
  record[3] = sums.step_ms / static_cast<double>(std::max<int64_t>(sums.steps, 1));
  // Each layer's share of the stage's forward time, applied to forward + backward (backward
  // is not timed per layer; the emulated slowdown stretches the stage as a whole).
  double timed = 0;
  for (int64_t l = run.first; l < run.first + run.count; ++l) {
    timed += run.clock->forward_ms[static_cast<size_t>(l)];
  }
  if (!run.clock->enabled || timed <= 0) return record;
  for (int64_t l = run.first; l < run.first + run.count; ++l) {
    record[kFixed + static_cast<size_t>(l)] =
        (record[1] + record[2]) * run.clock->forward_ms[static_cast<size_t>(l)] / timed;
  }
  return record;
}

}  // namespace

hetrun::Result<WindowFigures> GatherWindow(hetrun::Runtime& rt, StageRun& run, double share,
                                           WindowSums& sums) {
  const std::vector<double> mine = Record(run, share, sums);
  WindowFigures out;
  out.mine.first_layer = run.first;
  out.mine.layers = run.count;
  out.mine.samples = sums.samples;
  out.mine.micro_batches = run.layout.micro_batches;
  out.mine.forward_ms = mine[1];
  out.mine.backward_ms = mine[2];
  if (run.clock->enabled &&
      std::any_of(mine.begin() + kFixed, mine.end(), [](double ms) { return ms > 0; })) {
    out.mine.layer_ms.assign(
        mine.begin() + static_cast<std::ptrdiff_t>(kFixed + run.first),
        mine.begin() + static_cast<std::ptrdiff_t>(kFixed + run.first + run.count));
  }
  sums = WindowSums{};
  run.clock->Reset();
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(mine.data()),
                                   mine.size() * sizeof(double));
  HETRUN_ASSIGN_OR_RETURN(std::vector<std::byte> all, rt.AllGatherBytes(rt.world(), bytes));
  std::vector<double> values(all.size() / sizeof(double));
  std::memcpy(values.data(), all.data(), values.size() * sizeof(double));
  auto of = [&](int rank) { return values.data() + static_cast<size_t>(rank) * mine.size(); };
  for (int r = 0; r < rt.world_size(); ++r) {
    out.replica_ms.push_back(of(r)[1] + of(r)[2]);
    out.step_ms = std::max(out.step_ms, of(r)[3]);
  }
  for (const auto& stage : run.layout.stages) {
    out.shares.emplace_back();
    hetrun::pipeline::StageMeasurement m;
    m.first_layer = stage.first_layer;
    m.layers = stage.layers;
    int slowest = stage.ranks[0];
    for (int r : stage.ranks) {
      out.shares.back().push_back(of(r)[0]);
      if (of(r)[1] + of(r)[2] > of(slowest)[1] + of(slowest)[2]) slowest = r;
    }
    m.forward_ms = of(slowest)[1];
    m.backward_ms = of(slowest)[2];
    double layer_sum = 0;
    for (int64_t l = stage.first_layer; l < stage.first_layer + stage.layers; ++l) {
      m.layer_ms.push_back(of(slowest)[kFixed + static_cast<size_t>(l)]);
      layer_sum += m.layer_ms.back();
    }
    if (layer_sum <= 0) m.layer_ms.clear();
    out.stages.push_back(std::move(m));
  }
  return out;
}

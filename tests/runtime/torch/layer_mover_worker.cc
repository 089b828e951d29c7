// The process layer_mover_test.cc spawns: 5 ranks move the layers of a 6-layer toy model twice
// (a move back across two stages, then forward again) with hetrun::MoveLayers over Gloo, and
// check what each rank received against what its sender must have held.
//
//   layer_mover_worker moves    every rank prints "ok layers=... bytes=..." per move
//   layer_mover_worker dead     rank 3 exits before the move; the others must fail (exit 75)
#include <hetrun/layer_mover.h>
#include <hetrun/runtime.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <string>

namespace {

using hetrun::pipeline::JobLayout;

// Three stages over 5 ranks: replicas {0, 1}, {2}, {3, 4}; `split` gives the layers per stage.
JobLayout Layout(std::vector<int64_t> split) {
  JobLayout layout;
  layout.num_layers = 6;
  const std::vector<std::vector<int>> ranks = {{0, 1}, {2}, {3, 4}};
  int64_t first = 0;
  for (size_t s = 0; s < split.size(); ++s) {
    hetrun::pipeline::StageLayout stage;
    stage.first_layer = first;
    stage.layers = split[s];
    stage.ranks = ranks[s];
    stage.families.assign(ranks[s].size(), "");
    stage.shares.assign(ranks[s].size(), 1.0);
    layout.stages.push_back(stage);
    first += split[s];
  }
  return layout;
}

// What rank `holder` holds for `layer`: a float32 [3, layer + 1] from the layer's index, a
// float64 copy of it halved, and the holder's rank (so the receiver can tell who sent it).
std::vector<torch::Tensor> Held(int64_t layer, int holder) {
  torch::Tensor values = torch::arange(3 * (layer + 1), torch::kFloat32).reshape({3, layer + 1}) +
                         100.0 * static_cast<double>(layer);
  return {values, values.to(torch::kFloat64) * 0.5, torch::tensor(int64_t{holder})};
}

int Move(hetrun::Runtime& rt, const JobLayout& from, const JobLayout& to,
         std::map<int64_t, int>& holder) {
  // The expected sender of each layer this rank receives (replica j <- old replica j mod D).
  std::map<int64_t, int> expected;
  for (const hetrun::LayerTransfer& t : hetrun::PlanLayerTransfers(from, to)) {
    if (t.to == rt.rank()) expected[t.layer] = t.from;
  }
  hetrun::LayerMoveCallbacks io;
  io.export_layer = [&](int64_t layer) -> hetrun::Result<std::vector<torch::Tensor>> {
    if (!holder.count(layer)) return hetrun::InternalError("asked for a layer this rank lacks");
    return Held(layer, rt.rank());
  };
  std::string errors;
  io.import_layer = [&](int64_t layer, std::vector<torch::Tensor> got) -> hetrun::Status {
    std::vector<torch::Tensor> want = Held(layer, expected.count(layer) ? expected[layer] : -1);
    bool same = got.size() == want.size();
    for (size_t i = 0; same && i < got.size(); ++i) {
      same = got[i].scalar_type() == want[i].scalar_type() && got[i].sizes() == want[i].sizes() &&
             torch::equal(got[i], want[i]);
    }
    if (!same) errors += " layer " + std::to_string(layer);
    holder[layer] = rt.rank();
    return hetrun::Status::Ok();
  };
  auto report = hetrun::MoveLayers(rt, from, to, io);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return report.status().code() == hetrun::StatusCode::kUnavailable ? 75 : 1;
  }
  if (!errors.empty()) {
    std::fprintf(stderr, "rank %d received wrong tensors for%s\n", rt.rank(), errors.c_str());
    return 1;
  }
  std::string layers;
  for (int64_t l : report->layers) layers += (layers.empty() ? "" : ",") + std::to_string(l);
  std::printf("ok layers=%s transfers=%lld bytes=%lld received=%lld\n", layers.c_str(),
              static_cast<long long>(report->transfers), static_cast<long long>(report->bytes),
              static_cast<long long>(report->bytes_received));
  // Layers that left this rank's stage are no longer held here.
  const int stage = to.StageOf(rt.rank());
  const auto& mine = to.stages[static_cast<size_t>(stage)];
  for (auto it = holder.begin(); it != holder.end();) {
    bool keep = it->first >= mine.first_layer && it->first < mine.first_layer + mine.layers;
    it = keep ? std::next(it) : holder.erase(it);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  const std::string mode = argc > 1 ? argv[1] : "";
  hetrun::RuntimeOptions options;
  options.timeout = std::chrono::seconds(30);  // a dead peer must fail well within the test's
  auto rt_or = hetrun::Runtime::FromEnv(hetrun::Environment::FromProcess(), options);
  if (!rt_or.ok()) {
    std::fprintf(stderr, "%s\n", rt_or.status().ToString().c_str());
    return 1;
  }
  hetrun::Runtime& rt = **rt_or;
  const JobLayout first = Layout({1, 1, 4}), second = Layout({4, 1, 1}), third = Layout({1, 2, 3});
  std::map<int64_t, int> holder;  // the layers this rank holds
  const auto& stage = first.stages[static_cast<size_t>(first.StageOf(rt.rank()))];
  for (int64_t l = stage.first_layer; l < stage.first_layer + stage.layers; ++l) holder[l] = 0;
  if (mode == "dead") {
    if (hetrun::Status s = rt.Barrier(); !s.ok()) return 1;
    if (rt.rank() == 3) return 3;
    return Move(rt, first, second, holder);
  }
  if (mode != "moves") {
    std::fprintf(stderr, "usage: layer_mover_worker moves|dead\n");
    return 64;
  }
  // Layers 1 (stage 1 -> 0), 2 and 3 (stage 2 -> 0: two stages back), 4 (stage 2 -> 1); then
  // 1, 2 (0 -> 1), 3 (0 -> 2: two stages forward), 4 (1 -> 2).
  if (int code = Move(rt, first, second, holder); code != 0) return code;
  return Move(rt, second, third, holder);
}

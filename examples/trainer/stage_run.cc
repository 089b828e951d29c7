#include "stage_run.h"

#include <hetrun/adam_state.h>

#include <chrono>
#include <numeric>
#include <string>

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The stage's forward over its layer range [first, first + count); on CPU each layer's forward
// time goes into `clock`.
hetrun::PipelineStage MakeStage(TinyGpt model, const PipelineFlags& flags, int64_t first,
                                int64_t count, std::shared_ptr<LayerClock> clock) {
  hetrun::PipelineStage stage;
  const int64_t head = flags.model.layers + 1;
  for (int64_t layer = first; layer < first + count; ++layer) {
    for (const torch::Tensor& p : model->LayerParameters(layer)) stage.parameters.push_back(p);
  }
  stage.forward = [model, flags, first, count, head, clock](
                      const torch::Tensor& input, int64_t step,
                      const hetrun::pipeline::SampleRange& samples) mutable {
    auto [tokens, targets] = SyntheticSamples(flags.model, step, samples.begin, samples.size());
    torch::Tensor x = input;
    for (int64_t layer = first; layer < first + count; ++layer) {
      const auto start = std::chrono::steady_clock::now();
      if (layer == 0) {
        x = model->Embed(tokens);
      } else if (layer == head) {
        x = model->HeadLoss(x, targets);
      } else {
        x = model->Block(layer - 1, x);
      }
      if (clock->enabled) clock->forward_ms[static_cast<size_t>(layer)] += MsSince(start);
    }
    return x;
  };
  stage.input_dtype = flags.float64 ? torch::kFloat64 : torch::kFloat32;
  stage.input_shape = [flags](int64_t n) {
    return std::vector<int64_t>{n, flags.model.seq, flags.model.dim};
  };
  return stage;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

std::vector<int64_t> SplitOf(const hetrun::pipeline::JobLayout& layout) {
  std::vector<int64_t> counts;
  for (const auto& stage : layout.stages) counts.push_back(stage.layers);
  return counts;
}

hetrun::Result<hetrun::pipeline::JobLayout> WithSplit(const hetrun::pipeline::JobLayout& layout,
                                                      const std::vector<int64_t>& counts) {
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (counts.size() != layout.stages.size() || total != layout.num_layers) {
    return hetrun::InvalidArgumentError("split " + Join(counts) + " does not fit the layout's " +
                                        std::to_string(layout.stages.size()) + " stages of " +
                                        std::to_string(layout.num_layers) + " layers (" +
                                        Join(SplitOf(layout)) + ")");
  }
  hetrun::pipeline::JobLayout out = layout;
  int64_t first = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    out.stages[s].first_layer = first;
    out.stages[s].layers = counts[s];
    first += counts[s];
  }
  out.revision = layout.revision + 1;
  HETRUN_RETURN_IF_ERROR(hetrun::pipeline::ValidateJobLayout(out, "the moved layout"));
  return out;
}

hetrun::Result<StageRun> BuildStageRun(hetrun::Runtime& rt, TinyGpt model,
                                       const PipelineFlags& flags,
                                       hetrun::pipeline::JobLayout layout) {
  StageRun run;
  const auto& entry = layout.stages[static_cast<size_t>(layout.StageOf(rt.rank()))];
  run.first = entry.first_layer;
  run.count = entry.layers;
  run.clock = std::make_shared<LayerClock>();
  run.clock->forward_ms.assign(static_cast<size_t>(layout.num_layers), 0.0);
  run.clock->enabled = !rt.on_gpu();
  hetrun::PipelineStage stage = MakeStage(model, flags, run.first, run.count, run.clock);
  run.optimizer =
      std::make_unique<torch::optim::AdamW>(stage.parameters, torch::optim::AdamWOptions(flags.lr));
  HETRUN_ASSIGN_OR_RETURN(run.exec,
                          hetrun::PipelineExecutor::Create(rt, layout, stage, flags.batch));
  run.layout = std::move(layout);
  return run;
}

hetrun::Result<MoveFigures> MoveStage(hetrun::Runtime& rt, TinyGpt model,
                                      const PipelineFlags& flags, StageRun& run,
                                      const std::vector<int64_t>& counts) {
  const auto start = std::chrono::steady_clock::now();
  HETRUN_ASSIGN_OR_RETURN(hetrun::pipeline::JobLayout next, WithSplit(run.layout, counts));
  std::map<int64_t, std::vector<torch::Tensor>> received;
  hetrun::LayerMoveCallbacks io;
  io.export_layer = [&](int64_t layer) {
    return hetrun::ExportAdamLayer(*run.optimizer, model->LayerParameters(layer));
  };
  io.import_layer = [&](int64_t layer, std::vector<torch::Tensor> tensors) {
    received[layer] = std::move(tensors);
    return hetrun::Status::Ok();
  };
  MoveFigures figures;
  HETRUN_ASSIGN_OR_RETURN(figures.report, hetrun::MoveLayers(rt, run.layout, next, io));
  HETRUN_ASSIGN_OR_RETURN(StageRun moved, BuildStageRun(rt, model, flags, next));
  for (int64_t layer = moved.first; layer < moved.first + moved.count; ++layer) {
    std::vector<torch::Tensor> params = model->LayerParameters(layer);
    std::vector<torch::Tensor> state;
    if (layer >= run.first && layer < run.first + run.count) {  // stays: its state carries over
      HETRUN_ASSIGN_OR_RETURN(state, hetrun::ExportAdamLayer(*run.optimizer, params));
    } else if (auto it = received.find(layer); it != received.end()) {
      state = std::move(it->second);
    } else {
      return hetrun::InternalError("layer " + std::to_string(layer) +
                                   " joined this stage but was not received");
    }
    HETRUN_RETURN_IF_ERROR(hetrun::ImportAdamLayer(*moved.optimizer, params, state));
  }
  run = std::move(moved);
  figures.pause_ms = MsSince(start);
  return figures;
}

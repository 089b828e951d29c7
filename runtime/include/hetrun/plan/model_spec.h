// The model a pipeline plan splits: an ordered list of layers with a relative compute cost and the
// bytes each one needs on its GPU, read from a JSON file (docs/reference/cli/plan.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::plan {

/// One layer after `repeat` has been expanded.
struct LayerSpec {
  std::string name;  ///< "embedding", "block.17" (a repeated entry gets ".<k>", k from 0)
  double cost = 0;   ///< compute per micro-batch on a device of speed 1.0 (any time unit), >= 0
  double bytes = 0;  ///< GPU memory the layer needs: weights, optimiser state, activations, >= 0
  double activation_bytes = 0;  ///< per sample: the output it hands to the next layer, >= 0
};

struct ModelSpec {
  int64_t micro_batches = 0;      ///< M: micro-batches per iteration (1F1B), >= 1
  int64_t micro_batch_size = 1;   ///< samples per micro-batch (HETRUN_MICRO_BATCH), >= 1
  std::vector<LayerSpec> layers;  ///< in pipeline order, at least one
  /// Milliseconds per cost unit on a speed-1.0 GPU: turns link transfers into the cost unit.
  /// Required when a layer gives activation_bytes.
  std::optional<double> cost_unit_ms;
  /// Tokens per sample (optional): turns samples into the token counts of frameworks that count
  /// batches in tokens (torchtitan after its PR #4121, `--torchtitan-version main`).
  std::optional<int64_t> sequence_length;

  /// True when some layer hands on activation bytes (stage boundaries cost link time).
  bool HasActivationBytes() const;
};

/// Most layers a model may expand to (keeps the exact planner's O(S·L²) bounded).
inline constexpr int64_t kMaxModelLayers = 4096;

/// Parses the model JSON:
///   {"micro_batches": 32, "micro_batch_size": 1, "cost_unit_ms": 160, "sequence_length": 4096,
///    "layers": [{"name": "block", "repeat": 62, "cost": 1.0, "bytes": 1.1e9,
///                "activation_bytes": 6.7e7}, ...]}
/// `activation_bytes` (optional, >= 0, a number or a size string): bytes per sample the layer
/// hands to the next; `cost_unit_ms` (> 0) is required as soon as a layer gives it.
/// Errors are kInvalidArgument and name `source` and the JSON path ("$.layers[1].cost").
Result<ModelSpec> ParseModelSpec(std::string_view json_text, std::string_view source);

/// Reads and parses `path` (kNotFound / kInvalidArgument naming the file).
Result<ModelSpec> LoadModelSpec(const std::string& path);

}  // namespace hetrun::plan

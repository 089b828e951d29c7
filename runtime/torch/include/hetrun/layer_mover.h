// Live layer moves between pipeline stages (docs/ARCHITECTURE.md §5.6): given the layout before
// and after a re-balance, every layer whose stage changes travels from its old stage to every
// replica of its new stage — replica j of the new stage receives from replica j mod D_old of the
// old one — over the world backend's point-to-point operations. What travels is whatever the
// trainer's export callback returns for the layer (its parameters and optimizer state: see
// adam_state.h for AdamW/Adam), any dtypes and shapes; the receiver gets the same tensors, in
// the same order, on the runtime's device.
//
//   hetrun::LayerMoveCallbacks io;
//   io.export_layer = [&](int64_t layer) { return hetrun::ExportAdamLayer(opt, Params(layer)); };
//   io.import_layer = [&](int64_t layer, std::vector<torch::Tensor> t) { received[layer] = t; ...
//   }; auto report = hetrun::MoveLayers(*rt, old_layout, new_layout, io);  // every rank calls it
//
// Three rounds per sender/receiver pair, every pair's operations posted together and then
// waited for (no ordering deadlock): sizes (2 int64), a header (per layer: index, tensors, per
// tensor dtype and shape) and one byte payload. A dead peer fails the wait with c10d's error:
// kUnavailable naming the pair, never a hang past the runtime's timeout. One all-gather over the
// world at the end gives every rank the job's totals for the report.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/runtime.h"

namespace hetrun {

struct LayerMoveCallbacks {
  /// The tensors of `layer` that travel (called on each sending rank, once per receiver).
  std::function<Result<std::vector<torch::Tensor>>(int64_t layer)> export_layer;
  /// The tensors received for `layer`, in export order (called on each receiving rank).
  std::function<Status(int64_t layer, std::vector<torch::Tensor> tensors)> import_layer;
};

/// One move's figures; the totals are the same on every rank.
struct LayerMoveReport {
  std::vector<int64_t> layers;  ///< the layers whose stage changed, ascending
  int64_t transfers = 0;        ///< (layer, receiving replica) pairs, job-wide
  int64_t bytes = 0;            ///< payload bytes sent, job-wide (header and sizes excluded)
  int64_t bytes_sent = 0;       ///< this rank's payload bytes sent
  int64_t bytes_received = 0;   ///< this rank's payload bytes received
  double transfer_ms = 0;       ///< the slowest rank's time in MoveLayers
};

/// One layer's journey: from rank `from` (old stage) to rank `to` (new stage).
struct LayerTransfer {
  int64_t layer = 0;
  int from = 0, to = 0;
};

/// The layers whose stage differs between `from` and `to` (same num_layers), ascending.
std::vector<int64_t> MovedLayers(const pipeline::JobLayout& from, const pipeline::JobLayout& to);

/// Every transfer of the move, job-wide, by layer then receiving replica: replica j of the new
/// stage receives from replica j mod D_old of the old one.
std::vector<LayerTransfer> PlanLayerTransfers(const pipeline::JobLayout& from,
                                              const pipeline::JobLayout& to);

/// Carries out the move on this rank (every rank of the job calls it, with the same layouts).
/// kInvalidArgument when the layouts are invalid, differ in layers or world size, or do not
/// match the runtime; kUnavailable when a peer fails; a callback's error is returned as is
/// (its peers then fail with kUnavailable when this rank exits).
Result<LayerMoveReport> MoveLayers(Runtime& runtime, const pipeline::JobLayout& from,
                                   const pipeline::JobLayout& to,
                                   const LayerMoveCallbacks& callbacks);

}  // namespace hetrun

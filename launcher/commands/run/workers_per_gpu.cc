#include "commands/run/workers_per_gpu.h"

#include <spdlog/spdlog.h>

#include <string>

namespace hetrun::launcher {

Status CheckWorkersFitDeclaredGpus(size_t workers, const Topology& topology,
                                   const Inventory& inventory, CountSources sources) {
  if (inventory.source != InventorySource::kFake || workers <= inventory.gpus.size()) {
    return Status::Ok();
  }
  std::string message =
      std::to_string(workers) + " local workers (" + topology.nproc_per_node.source + ") but " +
      std::to_string(inventory.gpus.size()) + " declared GPU(s) (" + inventory.source_detail +
      "): one worker per GPU; start at most " + std::to_string(inventory.gpus.size()) +
      " workers (--nproc-per-node) or declare one GPU per worker";
  if (sources.workers_from_flag || sources.gpus_from_flag) return UsageError(message);
  return InvalidArgumentError(message);
}

void WarnWorkersShareProbedGpus(size_t workers, const Inventory& inventory) {
  if (inventory.source != InventorySource::kProbe || inventory.gpus.empty() ||
      workers <= inventory.gpus.size()) {
    return;
  }
  spdlog::warn(
      "{} local workers but {} GPU(s) on this node: workers past local rank {} share a GPU "
      "(give --nproc-per-node {} or auto for one worker per GPU)",
      workers, inventory.gpus.size(), inventory.gpus.size() - 1, inventory.gpus.size());
}

}  // namespace hetrun::launcher

// More local workers than GPUs (docs/ARCHITECTURE.md §4.4): with declared GPUs (--fake-gpus,
// HETRUN_FAKE_GPUS) an error before anything starts, 64 when a flag gave either count and 78
// when both came from the environment; with probed GPUs a warning naming both counts (the
// workers would share GPUs).
#pragma once

#include <cstddef>

#include "hetrun/base/status.h"
#include "hetrun/job/inventory.h"
#include "hetrun/job/topology.h"

namespace hetrun::launcher {

/// Where the two counts came from: whether a flag gave the workers per node, the GPUs.
struct CountSources {
  bool workers_from_flag = false;
  bool gpus_from_flag = false;
};

/// Declared GPUs: an error when `workers` > the GPUs of `inventory`. OK for probed inventories.
Status CheckWorkersFitDeclaredGpus(size_t workers, const Topology& topology,
                                   const Inventory& inventory, CountSources sources);

/// Probed GPUs (at least one): a warning when `workers` > their count.
void WarnWorkersShareProbedGpus(size_t workers, const Inventory& inventory);

}  // namespace hetrun::launcher

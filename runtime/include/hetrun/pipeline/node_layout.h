// The job layout of a multi-node pipeline (docs/ARCHITECTURE.md §5.5), assembled on every node
// from the stage entries the launchers exchange at the rendezvous: each pod knows only its own
// stage (HETRUN_STAGE, HETRUN_STAGE_LAYERS at its VC_TASK_INDEX) and its workers' ranks. Every
// node assembles from the same records in the same order, so every node gets the same layout or
// the same error.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/pipeline/job_layout.h"

namespace hetrun::pipeline {

/// One node's (pod's) entry.
struct NodeStage {
  std::string node;         ///< "node 1 (host-b)", for messages
  int stage = -1;           ///< its HETRUN_STAGE
  int64_t first_layer = 0;  ///< its HETRUN_STAGE_LAYERS, FIRST:COUNT
  int64_t layers = 0;
  std::vector<int> ranks;     ///< its workers' global ranks
  std::string family;         ///< its GPUs' family ("" when unknown)
  int64_t micro_batches = 0;  ///< its HETRUN_MICRO_BATCHES (M), 0 when it sets none
};

/// The layout: stage s holds the ranks of every node whose entry is s (in the order given), its
/// layers from those entries, equal shares, and the nodes' micro_batches (M) — the number of
/// stages when no node sets one (one micro-batch per stage at least fills a 1F1B pipeline).
/// kInvalidArgument naming both nodes of a conflict: two nodes of one stage with different
/// layers; a stage no node holds; a stage whose layers do not start where the previous one's
/// end; two nodes with different M (one that sets none included); ranks that are not a
/// partition of [0, world_size).
Result<JobLayout> AssembleLayout(std::span<const NodeStage> nodes, int world_size);

}  // namespace hetrun::pipeline

#include "hetrun/pipeline/routing_table.h"

namespace hetrun::pipeline {

RoutingTable BuildRoutingTable(const JobLayout& layout, const StepSlices& slices) {
  RoutingTable table;
  table.step = slices;
  for (size_t s = 0; s + 1 < layout.stages.size(); ++s) {
    const StageLayout& from = layout.stages[s];
    const StageLayout& to = layout.stages[s + 1];
    table.transfers.emplace_back();
    for (size_t m = 0; m < slices.micro_batches.size(); ++m) {
      std::vector<Transfer>& pieces = table.transfers.back().emplace_back();
      for (int a = 0; a < from.replicas(); ++a) {
        for (int b = 0; b < to.replicas(); ++b) {
          auto stage = static_cast<int>(s);
          auto mb = static_cast<int64_t>(m);
          SampleRange common = Overlap(slices.Slice(stage, mb, a), slices.Slice(stage + 1, mb, b));
          if (common.empty()) continue;
          pieces.push_back({stage, mb, a, b, from.ranks[static_cast<size_t>(a)],
                            to.ranks[static_cast<size_t>(b)], common});
        }
      }
    }
  }
  return table;
}

std::vector<Transfer> RoutingTable::Incoming(const JobLayout& layout, int rank,
                                             int64_t micro_batch) const {
  std::vector<Transfer> out;
  int stage = layout.StageOf(rank);
  if (stage <= 0) return out;
  for (const Transfer& t :
       transfers[static_cast<size_t>(stage - 1)][static_cast<size_t>(micro_batch)]) {
    if (t.to_rank == rank) out.push_back(t);
  }
  return out;  // from_replica order is sample order: slices are consecutive
}

std::vector<Transfer> RoutingTable::Outgoing(const JobLayout& layout, int rank,
                                             int64_t micro_batch) const {
  std::vector<Transfer> out;
  int stage = layout.StageOf(rank);
  if (stage < 0 || static_cast<size_t>(stage) >= transfers.size()) return out;
  for (const Transfer& t :
       transfers[static_cast<size_t>(stage)][static_cast<size_t>(micro_batch)]) {
    if (t.from_rank == rank) out.push_back(t);
  }
  return out;
}

}  // namespace hetrun::pipeline

#include "hetrun/pipeline/step_slices.h"

namespace hetrun::pipeline {

const SampleRange& StepSlices::Slice(int stage, int64_t micro_batch, int replica) const {
  return slices[static_cast<size_t>(stage)][static_cast<size_t>(micro_batch)]
               [static_cast<size_t>(replica)];
}

Result<StepSlices> SliceStep(const JobLayout& layout, int64_t batch,
                             std::span<const std::vector<double>> shares) {
  if (!shares.empty() && shares.size() != layout.stages.size()) {
    return InvalidArgumentError("shares for " + std::to_string(shares.size()) +
                                " stages, but the layout has " +
                                std::to_string(layout.stages.size()));
  }
  Result<std::vector<SampleRange>> micro = SplitBatch(batch, layout.micro_batches);
  if (!micro.ok()) return micro.status();
  StepSlices out;
  out.micro_batches = *micro;
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const StageLayout& stage = layout.stages[s];
    const std::vector<double>& stage_shares = shares.empty() ? stage.shares : shares[s];
    std::string where = "stage " + std::to_string(s);
    if (stage_shares.size() != stage.ranks.size()) {
      return InvalidArgumentError(where + ": " + std::to_string(stage_shares.size()) +
                                  " shares for " + std::to_string(stage.ranks.size()) +
                                  " replicas");
    }
    out.slices.emplace_back();
    for (const SampleRange& mb : out.micro_batches) {
      Result<std::vector<SampleRange>> pieces = SplitByShares(mb, stage_shares, layout.min_share);
      if (!pieces.ok())
        return pieces.status().WithContext(where + ", micro-batch " + mb.ToString());
      out.slices.back().push_back(*pieces);
    }
  }
  return out;
}

}  // namespace hetrun::pipeline

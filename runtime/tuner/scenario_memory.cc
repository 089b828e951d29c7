// The memory ceilings of `hetrun simulate` (hetrun/tuner/scenario.h, ApplyMemoryCeilings): each
// rank's micro-batch cap from its ceiling, job-wide or per GPU model, as `hetrun run
// --memory-ceiling job|model` gives the workers (hetrun/memory/memory_ceiling.h).
#include <algorithm>
#include <map>
#include <string>

#include "hetrun/tuner/scenario.h"

namespace hetrun::tuner {

Status ApplyMemoryCeilings(Scenario& s, bool per_model) {
  if (!s.memory.given) return Status::Ok();
  const ScenarioMemory& m = s.memory;
  uint64_t job = UINT64_MAX;
  std::map<std::string, uint64_t> model;  // the smallest usable memory of each model
  for (size_t st = 0; st < s.stages.size(); ++st) {
    for (size_t r = 0; r < s.stages[st].ranks.size(); ++r) {
      const ScenarioRank& rank = s.stages[st].ranks[r];
      if (rank.memory_bytes == 0) {
        return InvalidArgumentError("scenario: stages[" + std::to_string(st) + "].ranks[" +
                                    std::to_string(r) +
                                    "].memory_mib: missing (the memory block needs every rank's)");
      }
      job = std::min(job, rank.memory_bytes);
      auto [it, fresh] = model.try_emplace(rank.PeerModel(), rank.memory_bytes);
      if (!fresh) it->second = std::min(it->second, rank.memory_bytes);
    }
  }
  for (size_t st = 0; st < s.stages.size(); ++st) {
    for (size_t r = 0; r < s.stages[st].ranks.size(); ++r) {
      ScenarioRank& rank = s.stages[st].ranks[r];
      // An unknown model ("") has no model ceiling: the job's, as hetrun run gives it.
      const std::string key = rank.PeerModel();
      const uint64_t usable = per_model && !key.empty() ? model[key] : job;
      const uint64_t floor = m.reserve_bytes + m.fixed_bytes + m.bytes_per_sample;
      if (usable < floor) {
        return InvalidArgumentError("scenario: stages[" + std::to_string(st) + "].ranks[" +
                                    std::to_string(r) + "]: not one sample fits its ceiling (" +
                                    std::to_string(usable >> 20) +
                                    " MiB usable - reserve - fixed_bytes < bytes_per_sample)");
      }
      const uint64_t ceiling = usable - m.reserve_bytes;
      rank.max_micro_batch = static_cast<int64_t>((ceiling - m.fixed_bytes) / m.bytes_per_sample);
    }
  }
  s.memory.per_model = per_model;
  return Status::Ok();
}

}  // namespace hetrun::tuner

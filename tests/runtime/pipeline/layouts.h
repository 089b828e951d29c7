// Layouts the pipeline geometry tests share: the shapes and seeded random meshes.
#pragma once

#include <random>
#include <vector>

#include "hetrun/pipeline/job_layout.h"

namespace hetrun::pipeline::testing {

/// S stages with replicas[s] ranks each (ranks in stage order), one layer per stage, shares
/// shares[s] (equal when not given).
inline JobLayout Mesh(const std::vector<int>& replicas, int64_t micro_batches,
                      const std::vector<std::vector<double>>& shares = {}) {
  JobLayout layout;
  layout.micro_batches = micro_batches;
  int rank = 0;
  for (size_t s = 0; s < replicas.size(); ++s) {
    StageLayout stage;
    stage.first_layer = static_cast<int64_t>(s);
    stage.layers = 1;
    for (int r = 0; r < replicas[s]; ++r) stage.ranks.push_back(rank++);
    stage.families.assign(stage.ranks.size(), "");
    stage.shares = shares.empty() ? std::vector<double>(stage.ranks.size(), 1.0) : shares[s];
    layout.stages.push_back(stage);
  }
  layout.num_layers = static_cast<int64_t>(replicas.size());
  return layout;
}

/// A seeded random mesh: 1-6 stages of 1-4 replicas, random shares, 1-8 micro-batches.
inline JobLayout RandomMesh(std::mt19937& gen) {
  std::uniform_int_distribution<int> stages(1, 6), replicas(1, 4), micro(1, 8);
  std::uniform_real_distribution<double> share(0.2, 3.0);
  std::vector<int> d;
  std::vector<std::vector<double>> shares;
  for (int s = stages(gen); s > 0; --s) {
    d.push_back(replicas(gen));
    shares.emplace_back();
    for (int r = 0; r < d.back(); ++r) shares.back().push_back(share(gen));
  }
  return Mesh(d, micro(gen), shares);
}

}  // namespace hetrun::pipeline::testing

#include "hetrun/pipeline/job_layout.h"

#include <cmath>

#include "hetrun/plan/model_spec.h"

namespace hetrun::pipeline {

std::string_view ScheduleKindName(ScheduleKind kind) {
  return kind == ScheduleKind::kGPipe ? "gpipe" : "1f1b";
}

Result<ScheduleKind> ParseScheduleKind(std::string_view text) {
  if (text == "1f1b") return ScheduleKind::k1F1B;
  if (text == "gpipe") return ScheduleKind::kGPipe;
  return InvalidArgumentError("schedule \"" + std::string(text) + "\" is not one of 1f1b, gpipe");
}

int JobLayout::world_size() const {
  int n = 0;
  for (const StageLayout& stage : stages) n += stage.replicas();
  return n;
}

int JobLayout::StageOf(int rank) const {
  for (size_t s = 0; s < stages.size(); ++s) {
    for (int r : stages[s].ranks) {
      if (r == rank) return static_cast<int>(s);
    }
  }
  return -1;
}

int JobLayout::ReplicaOf(int rank) const {
  for (const StageLayout& stage : stages) {
    for (size_t i = 0; i < stage.ranks.size(); ++i) {
      if (stage.ranks[i] == rank) return static_cast<int>(i);
    }
  }
  return -1;
}

namespace {

Status CheckStageReplicas(const StageLayout& stage, const std::string& where) {
  if (stage.ranks.empty()) return InvalidArgumentError(where + " has no ranks (replicas)");
  if (stage.families.size() != stage.ranks.size()) {
    return InvalidArgumentError(where + " lists " + std::to_string(stage.families.size()) +
                                " families for its " + std::to_string(stage.ranks.size()) +
                                " ranks");
  }
  if (stage.shares.size() != stage.ranks.size()) {
    return InvalidArgumentError(where + " lists " + std::to_string(stage.shares.size()) +
                                " shares for its " + std::to_string(stage.ranks.size()) + " ranks");
  }
  for (double share : stage.shares) {
    if (!std::isfinite(share) || share <= 0) {
      return InvalidArgumentError(where + ": share " + std::to_string(share) +
                                  " is not positive and finite");
    }
  }
  return Status::Ok();
}

Status CheckLayers(const JobLayout& layout, const std::string& prefix) {
  if (layout.num_layers < 1 || layout.num_layers > plan::kMaxModelLayers) {
    return InvalidArgumentError(
        prefix + "the model has " + std::to_string(layout.num_layers) + " layers, " +
        (layout.num_layers < 1 ? std::string("fewer than 1")
                               : "more than " + std::to_string(plan::kMaxModelLayers)));
  }
  int64_t next = 0;
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const StageLayout& stage = layout.stages[s];
    std::string where = prefix + "stage " + std::to_string(s);
    if (stage.layers < 1) return InvalidArgumentError(where + " holds no layers");
    if (stage.layers > layout.num_layers) {  // also keeps `next` below from wrapping
      return InvalidArgumentError(where + " holds " + std::to_string(stage.layers) +
                                  " layers, more than the model's " +
                                  std::to_string(layout.num_layers));
    }
    if (stage.first_layer != next) {
      return InvalidArgumentError(
          where + " starts at layer " + std::to_string(stage.first_layer) + " but " +
          (s == 0
               ? std::string("the model starts at layer 0")
               : "stage " + std::to_string(s - 1) + " ends before layer " + std::to_string(next)) +
          (stage.first_layer < next ? " (overlap)" : " (gap)"));
    }
    next = stage.first_layer + stage.layers;
    if (next > layout.num_layers) break;  // reported below as coverage
  }
  if (next != layout.num_layers) {
    return InvalidArgumentError(prefix + "the stages cover layers [0, " + std::to_string(next) +
                                ") but the model has " + std::to_string(layout.num_layers) +
                                " layers");
  }
  if (!layout.layer_names.empty() &&
      static_cast<int64_t>(layout.layer_names.size()) != layout.num_layers) {
    return InvalidArgumentError(prefix + std::to_string(layout.layer_names.size()) +
                                " layer names for a model of " + std::to_string(layout.num_layers) +
                                " layers");
  }
  return Status::Ok();
}

Status CheckRevisionAndCosts(const JobLayout& layout, const std::string& prefix) {
  if (layout.revision < 0) {
    return InvalidArgumentError(prefix + "revision must be >= 0, got " +
                                std::to_string(layout.revision));
  }
  if (layout.revision > kMaxLayoutRevision) {
    return InvalidArgumentError(prefix + "revision must be in [0, 2^40], got " +
                                std::to_string(layout.revision));
  }
  if (layout.layer_costs.empty()) return Status::Ok();
  if (static_cast<int64_t>(layout.layer_costs.size()) != layout.num_layers) {
    return InvalidArgumentError(prefix + std::to_string(layout.layer_costs.size()) +
                                " layer costs for a model of " + std::to_string(layout.num_layers) +
                                " layers");
  }
  for (size_t l = 0; l < layout.layer_costs.size(); ++l) {
    double cost = layout.layer_costs[l];
    if (!std::isfinite(cost) || cost < 0) {
      return InvalidArgumentError(prefix + "layer_costs[" + std::to_string(l) +
                                  "] must be a finite number >= 0, got " + std::to_string(cost));
    }
  }
  return Status::Ok();
}

Status CheckRanks(const JobLayout& layout, const std::string& prefix) {
  const int world = layout.world_size();
  std::vector<int> owner(static_cast<size_t>(world), -1);
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    for (int rank : layout.stages[s].ranks) {
      std::string where = prefix + "stage " + std::to_string(s);
      if (rank < 0 || rank >= world) {
        return InvalidArgumentError(where + ": rank " + std::to_string(rank) + " is not in [0, " +
                                    std::to_string(world) + ") (the stages hold " +
                                    std::to_string(world) + " ranks)");
      }
      int& seen = owner[static_cast<size_t>(rank)];
      if (seen >= 0) {
        return InvalidArgumentError(where + ": rank " + std::to_string(rank) +
                                    " is already in stage " + std::to_string(seen));
      }
      seen = static_cast<int>(s);
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateJobLayout(const JobLayout& layout, std::string_view source) {
  std::string prefix = source.empty() ? "" : std::string(source) + ": ";
  if (layout.stages.empty()) return InvalidArgumentError(prefix + "the layout has no stages");
  if (layout.micro_batches < 1) {
    return InvalidArgumentError(prefix + "micro_batches must be >= 1, got " +
                                std::to_string(layout.micro_batches));
  }
  if (layout.min_share < 1) {
    return InvalidArgumentError(prefix + "min_share must be >= 1, got " +
                                std::to_string(layout.min_share));
  }
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    Status status = CheckStageReplicas(layout.stages[s], prefix + "stage " + std::to_string(s));
    if (!status.ok()) return status;
  }
  Status layers = CheckLayers(layout, prefix);
  if (!layers.ok()) return layers;
  HETRUN_RETURN_IF_ERROR(CheckRevisionAndCosts(layout, prefix));
  return CheckRanks(layout, prefix);
}

}  // namespace hetrun::pipeline

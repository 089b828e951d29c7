#include "hetrun/pipeline/node_layout.h"

#include <map>

namespace hetrun::pipeline {
namespace {

std::string Layers(const NodeStage& n) {
  return std::to_string(n.first_layer) + ":" + std::to_string(n.layers);
}

// Stage index -> the nodes that hold it, in the order given; checks they agree on the layers.
Result<std::map<int, std::vector<const NodeStage*>>> GroupByStage(
    std::span<const NodeStage> nodes) {
  std::map<int, std::vector<const NodeStage*>> stages;
  for (const NodeStage& n : nodes) {
    if (n.stage < 0) return InvalidArgumentError(n.node + " has no pipeline stage (HETRUN_STAGE)");
    std::vector<const NodeStage*>& holders = stages[n.stage];
    if (!holders.empty()) {
      const NodeStage& first = *holders.front();
      if (first.first_layer != n.first_layer || first.layers != n.layers) {
        return InvalidArgumentError(n.node + " holds stage " + std::to_string(n.stage) +
                                    " with layers " + Layers(n) + " but " + first.node +
                                    " holds it with layers " + Layers(first));
      }
    }
    holders.push_back(&n);
  }
  return stages;
}

// Every node's M must be the same (a pod that sets none differs from one that sets 8: a
// deployment half-updated); 0 when none sets it.
Result<int64_t> AgreedMicroBatches(std::span<const NodeStage> nodes) {
  auto text = [](const NodeStage& n) {
    return n.micro_batches > 0 ? "sets HETRUN_MICRO_BATCHES=" + std::to_string(n.micro_batches)
                               : std::string("sets no HETRUN_MICRO_BATCHES");
  };
  for (const NodeStage& n : nodes) {
    if (n.micro_batches != nodes.front().micro_batches) {
      return InvalidArgumentError(n.node + " " + text(n) + " but " + nodes.front().node + " " +
                                  text(nodes.front()));
    }
  }
  return nodes.empty() ? 0 : nodes.front().micro_batches;
}

}  // namespace

Result<JobLayout> AssembleLayout(std::span<const NodeStage> nodes, int world_size) {
  HETRUN_ASSIGN_OR_RETURN(auto stages, GroupByStage(nodes));
  HETRUN_ASSIGN_OR_RETURN(const int64_t micro_batches, AgreedMicroBatches(nodes));
  JobLayout layout;
  int expected = 0;
  for (const auto& [index, holders] : stages) {
    const NodeStage& head = *holders.front();
    if (index != expected) {
      return InvalidArgumentError("no node holds stage " + std::to_string(expected) + " (" +
                                  head.node + " holds stage " + std::to_string(index) + ")");
    }
    if (index > 0) {
      const StageLayout& previous = layout.stages.back();
      const int64_t end = previous.first_layer + previous.layers;
      if (head.first_layer != end) {
        return InvalidArgumentError(
            head.node + " holds stage " + std::to_string(index) + " from layer " +
            std::to_string(head.first_layer) + " but " + stages.at(index - 1).front()->node +
            " holds stage " + std::to_string(index - 1) + " up to layer " + std::to_string(end) +
            (head.first_layer < end ? " (overlap)" : " (gap)"));
      }
    }
    StageLayout stage{head.first_layer, head.layers, {}, {}, {}};
    for (const NodeStage* n : holders) {
      for (int r : n->ranks) {
        stage.ranks.push_back(r);
        stage.families.push_back(n->family);
      }
    }
    stage.shares.assign(stage.ranks.size(), 1.0);
    layout.stages.push_back(std::move(stage));
    ++expected;
  }
  if (!layout.stages.empty()) {
    layout.num_layers = layout.stages.back().first_layer + layout.stages.back().layers;
  }
  layout.micro_batches =
      micro_batches > 0 ? micro_batches : static_cast<int64_t>(layout.stages.size());
  if (layout.world_size() != world_size) {
    return InvalidArgumentError("the nodes' stages hold " + std::to_string(layout.world_size()) +
                                " ranks, but the job has " + std::to_string(world_size));
  }
  HETRUN_RETURN_IF_ERROR(ValidateJobLayout(layout, "the nodes' pipeline stages"));
  return layout;
}

}  // namespace hetrun::pipeline

#include "hetrun/pipeline/node_layout.h"

#include <gtest/gtest.h>

namespace hetrun::pipeline {
namespace {

// The article's job: light stage 0 and 5 on A100 pods, heavy stages 1-4 on H100 pods, 2 GPUs each.
std::vector<NodeStage> ArticleNodes() {
  std::vector<NodeStage> nodes;
  const int64_t first[] = {0, 4, 18, 32, 46, 60};
  const int64_t count[] = {4, 14, 14, 14, 14, 4};
  for (int s = 0; s < 6; ++s) {
    nodes.push_back({"node " + std::to_string(s),
                     s,
                     first[s],
                     count[s],
                     {2 * s, 2 * s + 1},
                     s == 0 || s == 5 ? "ampere" : "hopper",
                     8});
  }
  return nodes;
}

std::string ErrorOf(const std::vector<NodeStage>& nodes, int world) {
  Result<JobLayout> layout = AssembleLayout(nodes, world);
  EXPECT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  return layout.ok() ? "" : layout.status().message();
}

TEST(NodeLayoutTest, EveryNodesEntryBecomesItsStage) {
  std::vector<NodeStage> nodes = ArticleNodes();
  std::swap(nodes[1], nodes[4]);  // records arrive in any order
  Result<JobLayout> layout = AssembleLayout(nodes, 12);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  ASSERT_EQ(layout->stages.size(), 6u);
  EXPECT_EQ(layout->num_layers, 64);
  EXPECT_EQ(layout->stages[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(layout->stages[5].families, (std::vector<std::string>{"ampere", "ampere"}));
  EXPECT_EQ(layout->micro_batches, 8);
}

TEST(NodeLayoutTest, PodsOfOneStageAreItsReplicas) {
  std::vector<NodeStage> nodes{{"node 0", 0, 0, 2, {0}, "ampere"},
                               {"node 1", 1, 2, 4, {1}, "hopper"},
                               {"node 2", 1, 2, 4, {2}, "hopper"}};
  Result<JobLayout> layout = AssembleLayout(nodes, 3);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->stages[1].ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(layout->micro_batches, 2) << "no node sets M: one micro-batch per stage";
}

TEST(NodeLayoutTest, ConflictsNameBothNodes) {
  std::vector<NodeStage> gap = ArticleNodes();
  gap[3].first_layer = 33;
  EXPECT_EQ(ErrorOf(gap, 12),
            "node 3 holds stage 3 from layer 33 but node 2 holds stage 2 up to layer 32 (gap)");
  std::vector<NodeStage> missing = ArticleNodes();
  missing.erase(missing.begin() + 2);
  EXPECT_EQ(ErrorOf(missing, 10), "no node holds stage 2 (node 3 holds stage 3)");
  std::vector<NodeStage> disagree = ArticleNodes();
  disagree.push_back({"node 6", 1, 4, 12, {12}, "hopper"});
  EXPECT_EQ(ErrorOf(disagree, 13),
            "node 6 holds stage 1 with layers 4:12 but node 1 holds it with layers 4:14");
  std::vector<NodeStage> none = ArticleNodes();
  none[4].stage = -1;
  EXPECT_EQ(ErrorOf(none, 12), "node 4 has no pipeline stage (HETRUN_STAGE)");
  EXPECT_EQ(ErrorOf(ArticleNodes(), 14), "the nodes' stages hold 12 ranks, but the job has 14");
  std::vector<NodeStage> other_m = ArticleNodes();
  other_m[2].micro_batches = 16;
  EXPECT_EQ(ErrorOf(other_m, 12),
            "node 2 sets HETRUN_MICRO_BATCHES=16 but node 0 sets HETRUN_MICRO_BATCHES=8");
  std::vector<NodeStage> unset_m = ArticleNodes();
  unset_m[5].micro_batches = 0;
  EXPECT_EQ(ErrorOf(unset_m, 12),
            "node 5 sets no HETRUN_MICRO_BATCHES but node 0 sets HETRUN_MICRO_BATCHES=8");
}

}  // namespace
}  // namespace hetrun::pipeline

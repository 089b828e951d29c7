#include "hetrun/pipeline/routing_table.h"

#include <gtest/gtest.h>

#include <random>

#include "layouts.h"

namespace hetrun::pipeline {
namespace {

using testing::Mesh;
using testing::RandomMesh;

// Every sample of every micro-batch crosses every boundary exactly once, from the replica that
// holds it on the stage before to the replica that holds it on the stage after.
void ExpectEachSampleCrossesOnce(const JobLayout& layout, int64_t batch) {
  Result<StepSlices> slices = SliceStep(layout, batch);
  ASSERT_TRUE(slices.ok()) << slices.status().ToString();
  RoutingTable table = BuildRoutingTable(layout, *slices);
  ASSERT_EQ(table.transfers.size(), layout.stages.size() - 1);
  for (size_t s = 0; s + 1 < layout.stages.size(); ++s) {
    for (size_t m = 0; m < slices->micro_batches.size(); ++m) {
      const SampleRange& mb = slices->micro_batches[m];
      std::vector<int> crossings(static_cast<size_t>(batch), 0);
      for (const Transfer& t : table.transfers[s][m]) {
        ASSERT_FALSE(t.samples.empty());
        auto stage = static_cast<int>(s);
        EXPECT_EQ(Overlap(t.samples, slices->Slice(stage, t.micro_batch, t.from_replica)),
                  t.samples);
        EXPECT_EQ(Overlap(t.samples, slices->Slice(stage + 1, t.micro_batch, t.to_replica)),
                  t.samples);
        EXPECT_EQ(t.from_rank, layout.stages[s].ranks[static_cast<size_t>(t.from_replica)]);
        EXPECT_EQ(t.to_rank, layout.stages[s + 1].ranks[static_cast<size_t>(t.to_replica)]);
        for (int64_t i = t.samples.begin; i < t.samples.end; ++i)
          ++crossings[static_cast<size_t>(i)];
      }
      for (int64_t i = 0; i < batch; ++i) {
        EXPECT_EQ(crossings[static_cast<size_t>(i)], (i >= mb.begin && i < mb.end) ? 1 : 0)
            << "boundary " << s << " micro-batch " << m << " sample " << i;
      }
    }
  }
}

TEST(RoutingTableTest, HeterogeneousMeshSendsEachSampleOnceAcrossEveryBoundary) {
  JobLayout layout = Mesh({2, 1, 3}, 4, {{1.0, 2.0}, {1.0}, {3.0, 1.0, 2.0}});
  ExpectEachSampleCrossesOnce(layout, 24);
  ExpectEachSampleCrossesOnce(layout, 23);  // M does not divide the batch
}

TEST(RoutingTableTest, RandomMeshesSendEachSampleOnceAcrossEveryBoundary) {
  std::mt19937 gen(20261130);
  for (int trial = 0; trial < 200; ++trial) {
    JobLayout layout = RandomMesh(gen);
    int64_t batch = layout.micro_batches * 4 + trial % 7;
    ExpectEachSampleCrossesOnce(layout, batch);
  }
}

TEST(RoutingTableTest, OverlapsFollowTheSlices) {
  // Stage 0: two replicas of a 6-sample micro-batch, 2 and 4 samples; stage 1: three of 2 each.
  JobLayout layout = Mesh({2, 3}, 1, {{1.0, 2.0}, {1.0, 1.0, 1.0}});
  RoutingTable table = BuildRoutingTable(layout, *SliceStep(layout, 6));
  std::vector<Transfer> expected{
      {0, 0, 0, 0, 0, 2, {0, 2}}, {0, 0, 1, 1, 1, 3, {2, 4}}, {0, 0, 1, 2, 1, 4, {4, 6}}};
  EXPECT_EQ(table.transfers[0][0], expected);
  EXPECT_EQ(table.Incoming(layout, 4, 0), (std::vector<Transfer>{expected[2]}));
  EXPECT_EQ(table.Outgoing(layout, 1, 0), (std::vector<Transfer>{expected[1], expected[2]}));
  EXPECT_TRUE(table.Incoming(layout, 0, 0).empty());
  EXPECT_TRUE(table.Outgoing(layout, 3, 0).empty());
}

TEST(RoutingTableTest, AMicroBatchTooSmallForAStageNamesTheStage) {
  JobLayout layout = Mesh({1, 3}, 4);
  Result<StepSlices> slices = SliceStep(layout, 10);  // micro-batches of 3, 3, 2, 2
  ASSERT_FALSE(slices.ok());
  EXPECT_EQ(slices.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(slices.status().message().find("stage 1"), std::string::npos)
      << slices.status().message();
  EXPECT_NE(slices.status().message().find("needs at least 3"), std::string::npos);
}

}  // namespace
}  // namespace hetrun::pipeline

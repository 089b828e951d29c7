#include "hetrun/pipeline/sample_range.h"

#include <gtest/gtest.h>

#include <vector>

namespace hetrun::pipeline {
namespace {

using Ranges = std::vector<SampleRange>;

TEST(SampleRangeTest, MicroBatchSizesDifferByAtMostOneAndCoverTheBatch) {
  for (int64_t batch = 1; batch <= 40; ++batch) {
    for (int64_t m = 1; m <= batch; ++m) {
      Result<Ranges> micro = SplitBatch(batch, m);
      ASSERT_TRUE(micro.ok()) << micro.status().ToString();
      ASSERT_EQ(static_cast<int64_t>(micro->size()), m);
      int64_t next = 0, smallest = batch, largest = 0;
      for (const SampleRange& r : *micro) {
        EXPECT_EQ(r.begin, next);
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, batch);
      EXPECT_LE(largest - smallest, 1) << batch << " / " << m;
    }
  }
  EXPECT_EQ(*SplitBatch(10, 4), (Ranges{{0, 3}, {3, 6}, {6, 8}, {8, 10}}));
}

TEST(SampleRangeTest, MoreMicroBatchesThanSamplesIsAnError) {
  Result<Ranges> micro = SplitBatch(3, 4);
  ASSERT_FALSE(micro.ok());
  EXPECT_EQ(micro.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(micro.status().message().find("batch of 3 samples into 4"), std::string::npos);
  EXPECT_FALSE(SplitBatch(3, 0).ok());
}

TEST(SampleRangeTest, SharesSplitAMicroBatchProportionallyInOrder) {
  std::vector<double> shares{1.0, 3.0};
  EXPECT_EQ(*SplitByShares({10, 18}, shares, 1), (Ranges{{10, 12}, {12, 18}}));
  std::vector<double> thirds{1, 1, 1};
  // 10 samples: 3.33 each; the largest remainder goes to the lowest index.
  EXPECT_EQ(*SplitByShares({0, 10}, thirds, 1), (Ranges{{0, 4}, {4, 7}, {7, 10}}));
}

TEST(SampleRangeTest, EveryReplicaGetsAtLeastTheMinimumShare) {
  std::vector<double> skewed{0.98, 0.01, 0.01};
  Ranges pieces = *SplitByShares({0, 7}, skewed, 1);
  EXPECT_EQ(pieces, (Ranges{{0, 5}, {5, 6}, {6, 7}}));
  Ranges two = *SplitByShares({0, 8}, skewed, 2);
  EXPECT_EQ(two, (Ranges{{0, 4}, {4, 6}, {6, 8}}));
}

TEST(SampleRangeTest, AMicroBatchTooSmallForItsReplicasNamesBothSizes) {
  std::vector<double> shares{1, 1, 1};
  Result<Ranges> pieces = SplitByShares({0, 5}, shares, 2);
  ASSERT_FALSE(pieces.ok());
  EXPECT_EQ(pieces.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pieces.status().message().find("5 samples"), std::string::npos);
  EXPECT_NE(pieces.status().message().find("3 replicas 2 samples each (needs at least 6)"),
            std::string::npos)
      << pieces.status().message();
}

TEST(SampleRangeTest, NonPositiveSharesAreErrors) {
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    std::vector<double> shares{1.0, bad};
    EXPECT_FALSE(SplitByShares({0, 4}, shares, 1).ok()) << bad;
  }
  EXPECT_FALSE(SplitByShares({0, 4}, {}, 1).ok());
}

TEST(SampleRangeTest, OverlapIsEmptyWhenRangesDoNotMeet) {
  EXPECT_EQ(Overlap({0, 5}, {3, 9}), (SampleRange{3, 5}));
  EXPECT_TRUE(Overlap({0, 3}, {3, 9}).empty());
  EXPECT_TRUE(Overlap({5, 6}, {0, 2}).empty());
}

}  // namespace
}  // namespace hetrun::pipeline

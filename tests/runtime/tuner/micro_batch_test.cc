// Micro-batch size from the memory cap, and the count that covers a share.
#include "hetrun/tuner/micro_batch.h"

#include <gtest/gtest.h>

namespace hetrun::tuner {
namespace {

TEST(MicroBatchTest, LargestMicroBatchFitsTheCap) {
  EXPECT_EQ(*LargestMicroBatch({1000, 100}, 1000 + 100 * 7 + 99), 7);
  Result<int64_t> none = LargestMicroBatch({1000, 100}, 1099);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(LargestMicroBatch({0, 0}, 10).ok());
}

TEST(MicroBatchTest, CountIsTheCeilingAndSizesAreBalanced) {
  MicroBatchPlan plan = *PlanMicroBatches(130, 64);
  EXPECT_EQ(plan.size, 64);
  EXPECT_EQ(plan.count, 3);
  EXPECT_EQ(plan.balanced, 44);
  EXPECT_EQ(PlanMicroBatches(128, 64)->count, 2);
  EXPECT_EQ(PlanMicroBatches(0, 64)->count, 0);
  EXPECT_FALSE(PlanMicroBatches(10, 0).ok());
}

}  // namespace
}  // namespace hetrun::tuner

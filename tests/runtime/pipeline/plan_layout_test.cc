#include "hetrun/pipeline/plan_layout.h"

#include <gtest/gtest.h>

#include "hetrun/job/group_layout.h"

namespace hetrun::pipeline {
namespace {

constexpr const char* kPlan = R"({
  "layers": 6, "micro_batches": 4,
  "stages": [{"family": "ampere", "first_layer": 0, "layers": 2, "replicas": 2},
             {"family": "hopper", "first_layer": 2, "layers": 3},
             {"family": "ampere", "first_layer": 5, "layers": 1, "replicas": 3}]})";

TEST(PlanLayoutTest, StagesTakeTheRanksInOrder) {
  Result<JobLayout> layout = LayoutFromPlan(kPlan, "plan.json", 6);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->stages[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(layout->stages[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(layout->stages[2].ranks, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(layout->stages[2].families, (std::vector<std::string>{"ampere", "ampere", "ampere"}));
  EXPECT_EQ(layout->micro_batches, 4);
}

TEST(PlanLayoutTest, TheLayoutFileGivesTheRuntimeItsStageGroups) {
  JobLayout layout = *LayoutFromPlan(kPlan, "plan.json", 6);
  Result<GroupLayout> groups = ParseGroupLayout(JobLayoutJson(layout), "layout.json", 6);
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  EXPECT_EQ(groups->stages, (std::vector<std::vector<int>>{{0, 1}, {2}, {3, 4, 5}}));
  Result<GroupLayout> wrong = ParseGroupLayout(JobLayoutJson(layout), "layout.json", 5);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("hold 6 ranks, but WORLD_SIZE=5"), std::string::npos);
}

TEST(PlanLayoutTest, ReplicasThatDoNotAddUpToTheWorldNameBothNumbers) {
  Result<JobLayout> layout = LayoutFromPlan(kPlan, "plan.json", 4);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(layout.status().message(),
            "plan.json: the plan's 3 stages hold 6 replicas in all, but the job has 4 ranks "
            "(WORLD_SIZE)");
}

TEST(PlanLayoutTest, PlansThatAreNotPlanOutputAreErrors) {
  for (const char* text : {"{}", R"({"layers": 2})", R"({"layers": 2, "stages": [{"layers": 2}]})",
                           R"({"layers": 2, "stages": [{"first_layer": 0, "layers": 1}]})"}) {
    Result<JobLayout> layout = LayoutFromPlan(text, "plan.json", 1);
    ASSERT_FALSE(layout.ok()) << text;
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(layout.status().message().find("plan.json"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace hetrun::pipeline

namespace hetrun::pipeline {
namespace {

TEST(PlanLayoutTest, ThePlansLayerCostsAndRevisionAreKept) {
  std::string plan = R"({"layers": 3, "revision": 2, "layer_costs": [3, 1, 1],
    "stages": [{"first_layer": 0, "layers": 1}, {"first_layer": 1, "layers": 2}]})";
  Result<JobLayout> layout = LayoutFromPlan(plan, "plan.json", 2);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->revision, 2);
  EXPECT_EQ(layout->layer_costs, (std::vector<double>{3, 1, 1}));
  Result<JobLayout> bad = LayoutFromPlan(
      R"({"layers": 3, "layer_costs": [3, "x", 1],
    "stages": [{"first_layer": 0, "layers": 1}, {"first_layer": 1, "layers": 2}]})",
      "plan.json", 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "plan.json: $.layer_costs[1] must be a number");
  Result<JobLayout> short_costs = LayoutFromPlan(
      R"({"layers": 3, "layer_costs": [3, 1],
    "stages": [{"first_layer": 0, "layers": 1}, {"first_layer": 1, "layers": 2}]})",
      "plan.json", 2);
  ASSERT_FALSE(short_costs.ok());
  EXPECT_NE(short_costs.status().message().find("2 layer costs for a model of 3 layers"),
            std::string::npos);
}

}  // namespace
}  // namespace hetrun::pipeline

#include "hetrun/job/group_layout.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hetrun {
namespace {

using Stages = std::vector<std::vector<int>>;

TEST(GroupLayoutTest, WithoutAPlanTheWholeWorldIsOneGroup) {
  Result<GroupLayout> layout = ReadGroupLayout(Environment(), 3);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->stages, (Stages{{0, 1, 2}}));
  EXPECT_EQ(layout->source, "whole world");
  EXPECT_EQ(layout->StageOf(2), 0);
  EXPECT_EQ(layout->StageOf(3), -1);
}

TEST(GroupLayoutTest, EachStagesRanksFormOneGroup) {
  Result<GroupLayout> layout = ParseGroupLayout(
      R"({"stages": [{"ranks": [0, 1, 2, 3], "task": "heavy"}, {"ranks": [5, 4]}]})", "plan.json",
      6);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->stages, (Stages{{0, 1, 2, 3}, {5, 4}}));
  EXPECT_EQ(layout->source, "plan.json");
  EXPECT_EQ(layout->StageOf(3), 0);
  EXPECT_EQ(layout->StageOf(4), 1);
}

TEST(GroupLayoutTest, PlanWithoutRanksMeansTheWholeWorld) {
  for (const char* text : {R"({})", R"({"stages": [{"layers": 4}, {"layers": 2}]})"}) {
    Result<GroupLayout> layout = ParseGroupLayout(text, "plan.json", 2);
    ASSERT_TRUE(layout.ok()) << text << ": " << layout.status().ToString();
    EXPECT_EQ(layout->stages, (Stages{{0, 1}})) << text;
  }
}

TEST(GroupLayoutTest, RejectsBadPlansNamingTheFileAndTheProblem) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{"not json", "not valid JSON"},
           Case{"[1]", "not a JSON object"},
           Case{R"({"stages": 3})", "not an array"},
           Case{R"({"stages": [{"ranks": [0, 5]}]})", "5 is not a rank in [0, 2)"},
           Case{R"({"stages": [{"ranks": [0, -1]}]})", "-1 is not a rank"},
           Case{R"({"stages": [{"ranks": [0]}, {"ranks": [0, 1]}]})", "already in stage 0"},
           Case{R"({"stages": [{"ranks": [0]}]})", "rank 1 is in no stage"},
           Case{R"({"stages": [{"ranks": []}]})", "non-empty array"},
           Case{R"({"stages": [{"ranks": [0]}, {"layers": 1}]})", "$.stages[1].ranks is missing"},
           Case{R"({"stages": [{"layers": 1}, {"ranks": [0, 1]}]})", "earlier stages list no"},
       }) {
    Result<GroupLayout> layout = ParseGroupLayout(c.text, "plan.json", 2);
    ASSERT_FALSE(layout.ok()) << c.text;
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(layout.status().message().find("plan.json"), std::string::npos) << c.text;
    EXPECT_NE(layout.status().message().find(c.says), std::string::npos)
        << c.text << ": " << layout.status().ToString();
  }
}

TEST(GroupLayoutTest, ReadsThePlanFileNamedByHetrunPlan) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("hetrun-group-layout-" + std::to_string(getpid()));
  std::ofstream(path) << R"({"stages": [{"ranks": [1]}, {"ranks": [0]}]})";
  Result<GroupLayout> layout = ReadGroupLayout(Environment({{"HETRUN_PLAN", path.string()}}), 2);
  std::filesystem::remove(path);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->stages, (Stages{{1}, {0}}));
  EXPECT_NE(layout->source.find(path.string()), std::string::npos);
}

TEST(GroupLayoutTest, MissingPlanFileIsNotFound) {
  Result<GroupLayout> layout =
      ReadGroupLayout(Environment({{"HETRUN_PLAN", "/nonexistent/plan.json"}}), 2);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kNotFound);
  EXPECT_NE(layout.status().message().find("HETRUN_PLAN=/nonexistent/plan.json"),
            std::string::npos);
}

}  // namespace
}  // namespace hetrun

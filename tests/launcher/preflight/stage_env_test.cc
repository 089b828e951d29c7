#include "preflight/stage_env.h"

#include <gtest/gtest.h>

namespace hetrun::launcher {
namespace {

Environment Env(std::map<std::string, std::string> vars) {
  return Environment(std::move(vars));
}

TEST(StageEnvTest, OneStageOrNoneIsLeftAsItIs) {
  EXPECT_TRUE(PodStageVariables(Env({}), 0).value().vars.empty());
  EXPECT_TRUE(PodStageVariables(Env({{"HETRUN_STAGE", "3"}}), std::nullopt).value().vars.empty());
}

TEST(StageEnvTest, AListIsNarrowedToThePodsEntry) {
  auto vars = PodStageVariables(
      Env({{"HETRUN_STAGE", "1,2,3,4"}, {"HETRUN_STAGE_LAYERS", "4:14,18:14,32:14,46:14"}}), 2);
  ASSERT_TRUE(vars.ok()) << vars.status().ToString();
  EXPECT_EQ(vars->task_index, 2);
  EXPECT_EQ(vars->vars, (std::map<std::string, std::string>{{"HETRUN_STAGE", "3"},
                                                            {"HETRUN_STAGE_LAYERS", "32:14"}}));
  auto stage_only = PodStageVariables(Env({{"HETRUN_STAGE", "0,5"}}), 1);
  ASSERT_TRUE(stage_only.ok());
  EXPECT_EQ(stage_only->vars, (std::map<std::string, std::string>{{"HETRUN_STAGE", "5"}}));
}

TEST(StageEnvTest, WithoutATopologyIndexTheVolcanoVariableIsUsed) {
  auto vars =
      PodStageVariables(Env({{"HETRUN_STAGE", "0,5"}, {"VC_TASK_INDEX", "1"}}), std::nullopt);
  ASSERT_TRUE(vars.ok()) << vars.status().ToString();
  EXPECT_EQ(vars->vars.at("HETRUN_STAGE"), "5");
  EXPECT_EQ(vars->task_index, 1);
  auto deprecated =
      PodStageVariables(Env({{"HETRUN_STAGE", "0,5"}, {"VK_TASK_INDEX", "0"}}), std::nullopt);
  ASSERT_TRUE(deprecated.ok());
  EXPECT_EQ(deprecated->vars.at("HETRUN_STAGE"), "0");
  auto bad =
      PodStageVariables(Env({{"HETRUN_STAGE", "0,5"}, {"VC_TASK_INDEX", "-1"}}), std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("VC_TASK_INDEX=-1"), std::string::npos)
      << bad.status().message();
}

TEST(StageEnvTest, BadListsAreConfigErrorsNamingTheVariable) {
  struct Case {
    std::map<std::string, std::string> env;
    std::optional<int> index;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{{"HETRUN_STAGE", "1,2"}}, std::nullopt, "set VC_TASK_INDEX"},
      {{{"HETRUN_STAGE", "1,2"}}, 2, "task index 2 is past them"},
      {{{"HETRUN_STAGE", "1,x"}}, 0, "entry 'x' is not a stage index"},
      {{{"HETRUN_STAGE", "1,"}}, 0, "entry '' is not a stage index"},
      {{{"HETRUN_STAGE", "1,2"}, {"HETRUN_STAGE_LAYERS", "0:4"}},
       0,
       "HETRUN_STAGE_LAYERS=0:4 (environment) has 1 entries"},
      {{{"HETRUN_STAGE", "1,2"}, {"HETRUN_STAGE_LAYERS", "0:4,4"}},
       1,
       "entry '4' is not FIRST:COUNT"},
  };
  for (const Case& c : cases) {
    auto vars = PodStageVariables(Env(c.env), c.index);
    ASSERT_FALSE(vars.ok()) << c.expected;
    EXPECT_EQ(vars.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(vars.status().message().find(c.expected), std::string::npos)
        << vars.status().message();
  }
}

}  // namespace
}  // namespace hetrun::launcher

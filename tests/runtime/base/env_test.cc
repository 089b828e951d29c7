#include "hetrun/base/env.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace hetrun {
namespace {

TEST(EnvTableTest, NamesAreUniqueAndDescribed) {
  std::set<std::string_view> names;
  for (const EnvVarSpec& spec : EnvVarTable()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "declared twice: " << spec.name;
    EXPECT_FALSE(spec.description.empty()) << spec.name;
    EXPECT_FALSE(spec.type.empty()) << spec.name;
  }
  EXPECT_GT(names.size(), 40u);
}

TEST(EnvTableTest, TaskPlaceholderMatchesVolcanoTaskVariables) {
  ASSERT_NE(FindEnvVarSpec("VC_HEAVY_STAGE_WORKERS_HOSTS"), nullptr);
  EXPECT_EQ(FindEnvVarSpec("VC_HEAVY_STAGE_WORKERS_HOSTS")->name, "VC_<TASK>_HOSTS");
  EXPECT_EQ(FindEnvVarSpec("VC_MASTER_NUM")->name, "VC_<TASK>_NUM");
  EXPECT_EQ(FindEnvVarSpec("VC__NUM"), nullptr);  // the placeholder needs at least one character
  EXPECT_EQ(FindEnvVarSpec("NOT_DECLARED_ANYWHERE"), nullptr);
}

TEST(EnvTableTest, TheEnvironmentPageListsEveryVariable) {
  std::ifstream readme(std::string(HETRUN_SOURCE_DIR) + "/docs/reference/environment.md");
  ASSERT_TRUE(readme) << "docs/reference/environment.md not found";
  std::stringstream text;
  text << readme.rdbuf();
  for (const EnvVarSpec& spec : EnvVarTable()) {
    EXPECT_NE(text.str().find("`" + std::string(spec.name) + "`"), std::string::npos)
        << spec.name << " is missing from docs/reference/environment.md (make docs-update)";
  }
}

TEST(EnvironmentTest, GetReturnsSetValuesOnly) {
  Environment env({{"RANK", "3"}, {"MASTER_ADDR", ""}});
  EXPECT_EQ(env.Get("RANK"), "3");
  EXPECT_EQ(env.Get("MASTER_ADDR"), "");
  EXPECT_EQ(env.Get("WORLD_SIZE"), std::nullopt);
}

TEST(EnvironmentTest, TypedGettersNameTheVariableAndValueOnError) {
  Environment env({{"RANK", "three"}, {"WORLD_SIZE", "8"}, {"HETRUN_TERMINATION_LOG", "x"}});
  Result<std::optional<int64_t>> bad = env.GetInt("RANK");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("RANK='three' (environment)"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(**env.GetInt("WORLD_SIZE"), 8);
  EXPECT_EQ(*env.GetInt("MASTER_PORT"), std::nullopt);
}

TEST(EnvironmentTest, LongBinaryValuesAreCutInMessages) {
  std::string huge(100000, '\xff');
  Environment env({{"RANK", huge}});
  Result<std::optional<int64_t>> bad = env.GetInt("RANK");
  ASSERT_FALSE(bad.ok());
  EXPECT_LT(bad.status().message().size(), 600u);
}

TEST(EnvironmentTest, NamesWithPrefixAreSorted) {
  Environment env({{"VC_B_NUM", "1"}, {"VC_A_NUM", "2"}, {"VK_TASK_INDEX", "0"}, {"VC", "x"}});
  EXPECT_EQ(env.NamesWithPrefix("VC_"), (std::vector<std::string>{"VC_A_NUM", "VC_B_NUM"}));
}

TEST(EnvironmentTest, FromProcessSeesThisProcessEnvironment) {
  ASSERT_EQ(setenv("HETRUN_LOG_LEVEL", "debug", 1), 0);
  Environment env = Environment::FromProcess();
  EXPECT_EQ(env.Get("HETRUN_LOG_LEVEL"), "debug");
  EXPECT_TRUE(env.all().count("HETRUN_LOG_LEVEL"));
  unsetenv("HETRUN_LOG_LEVEL");
}

}  // namespace
}  // namespace hetrun

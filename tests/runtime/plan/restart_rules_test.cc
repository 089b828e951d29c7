// --k8s-version / --feature-gates / --restart and the trainer's restart rules they give
// (hetrun/plan/k8s_target.h, hetrun/plan/restart_rules.h). tests/manifests/ checks the emitted
// manifests against each version's API server rules.
#include "hetrun/plan/restart_rules.h"

#include <gtest/gtest.h>

#include "hetrun/base/exit_code.h"
#include "hetrun/plan/k8s_target.h"

namespace hetrun::plan {
namespace {

K8sTarget Parse(std::string_view version, std::string_view gates = "",
                std::string_view restart = "", std::string_view emit = "jobset") {
  auto target = ParseK8sTarget(version, gates, restart, emit);
  EXPECT_TRUE(target.ok()) << target.status().message();
  return target.ok() ? *target : K8sTarget{};
}

std::string Refusal(std::string_view version, std::string_view gates, std::string_view restart,
                    std::string_view emit = "jobset") {
  auto target = ParseK8sTarget(version, gates, restart, emit);
  EXPECT_FALSE(target.ok());
  EXPECT_EQ(ExitCodeFor(target.status()), kExitUsage);
  return target.ok() ? "" : target.status().message();
}

TEST(RestartRulesTest, NoRulesBefore135AndTheDefaultIsTheOldestVersion) {
  EXPECT_EQ(Parse("").minor, kK8sMinMinor);
  EXPECT_TRUE(ContainerRestartRules(Parse("")).empty());
  EXPECT_TRUE(ContainerRestartRules(Parse("1.34")).empty());
}

TEST(RestartRulesTest, From135TheContainerRestartsInPlaceOn75Only) {
  for (const char* version : {"1.35", "1.36", "1.37"}) {
    auto rules = ContainerRestartRules(Parse(version));
    ASSERT_EQ(rules.size(), 1u) << version;
    EXPECT_EQ(rules[0].action, "Restart");
    EXPECT_EQ(rules[0].codes, std::vector<int>{kExitTransient});
  }
  auto gated = ContainerRestartRules(Parse("1.34", "ContainerRestartRules=true"));
  ASSERT_EQ(gated.size(), 1u);
  for (int permanent :
       {kExitConfig, kExitArchMismatch, kExitCollectiveWrong, kExitFailSlow, kExitTerminated}) {
    EXPECT_NE(gated[0].codes.front(), permanent);
  }
}

TEST(RestartRulesTest, InPlaceRestartsAllContainersFrom136Or135WithTheGate) {
  EXPECT_EQ(ContainerRestartRules(Parse("1.36", "", "in-place"))[0].action, "RestartAllContainers");
  K8sTarget gated = Parse("1.35", "RestartAllContainersOnContainerExits=true", "in-place");
  EXPECT_TRUE(gated.RestartAll());
  EXPECT_EQ(ContainerRestartRules(gated)[0].action, "RestartAllContainers");
}

TEST(RestartRulesTest, CombinationsTheVersionCannotTakeAreRefusedNamingBoth) {
  std::string in_place = Refusal("1.35", "", "in-place");
  EXPECT_NE(in_place.find("--restart in-place"), std::string::npos) << in_place;
  EXPECT_NE(in_place.find("1.35"), std::string::npos) << in_place;
  std::string volcano = Refusal("1.36", "", "in-place", "volcano");
  EXPECT_NE(volcano.find("--emit volcano"), std::string::npos) << volcano;
  std::string early = Refusal("1.34", "RestartAllContainersOnContainerExits=true", "");
  EXPECT_NE(early.find("1.34"), std::string::npos) << early;
  std::string already = Refusal("1.35", "ContainerRestartRules=true", "");
  EXPECT_NE(already.find("on by default"), std::string::npos) << already;
  EXPECT_NE(Refusal("1.30", "", "").find("1.30"), std::string::npos);
  EXPECT_NE(Refusal("2.0", "", "").find("2.0"), std::string::npos);
  EXPECT_NE(Refusal("1.35", "Bogus=true", "").find("Bogus"), std::string::npos);
  EXPECT_NE(Refusal("1.35", "", "sometimes").find("sometimes"), std::string::npos);
}

TEST(RestartRulesTest, TheRestartTableHasARowPerExitCodeRow) {
  const std::string table = RestartTableMarkdown();
  size_t rows = 0;
  for (char c : table) rows += c == '\n';
  EXPECT_EQ(rows, ExitCodeTable().size() + 2);
  EXPECT_NE(table.find("| 75 | RestartJob | Count: RestartJobSet"), std::string::npos) << table;
}

}  // namespace
}  // namespace hetrun::plan

#include "hetrun/plan/cluster_spec.h"

#include <gtest/gtest.h>

#include "hetrun/job/gpu_model.h"

namespace hetrun::plan {
namespace {

constexpr const char* kSeedCluster = R"({
  "family_speed": {"ampere": 1.0, "hopper": 3.17},
  "label_key": "nvidia.com/gpu.family",
  "stages": [
    {"task": "light-stage-workers", "family": "ampere", "count": 1, "memory_bytes": 8.0e10},
    {"task": "heavy-stage-workers", "family": "hopper", "count": 4, "memory_bytes": 8.0e10},
    {"task": "light-stage-workers", "family": "ampere", "count": 1, "memory_bytes": 8.0e10}]})";

TEST(ClusterSpecTest, ExpandsStageGroupsWithTaskIndices) {
  auto cluster = ParseClusterSpec(kSeedCluster, "cluster.json");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  ASSERT_EQ(cluster->stages.size(), 6u);
  EXPECT_EQ(cluster->stages[0].task, "light-stage-workers");
  EXPECT_EQ(cluster->stages[0].task_index, 0);
  EXPECT_EQ(cluster->stages[4].task, "heavy-stage-workers");
  EXPECT_EQ(cluster->stages[4].task_index, 3);
  EXPECT_DOUBLE_EQ(cluster->stages[4].speed, 3.17);
  EXPECT_EQ(cluster->stages[5].task_index, 1);
  EXPECT_EQ(cluster->TaskOrder(),
            (std::vector<std::string>{"light-stage-workers", "heavy-stage-workers"}));
  EXPECT_EQ(cluster->label_key, "nvidia.com/gpu.family");
}

TEST(ClusterSpecTest, DefaultsComeFromTheDatasheet) {
  auto cluster = ParseClusterSpec(
      R"({"stages": [{"task": "w", "family": "hopper", "memory_bytes": "80GiB"}]})", "c");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_DOUBLE_EQ(cluster->stages[0].speed, 3.17);
  EXPECT_DOUBLE_EQ(cluster->stages[0].memory_bytes, 80.0 * (1ull << 30));
  EXPECT_EQ(cluster->label_key, "nvidia.com/gpu.family");
  EXPECT_EQ(cluster->queue, "default");
}

TEST(ClusterSpecTest, MeasuredSpeedsOverrideDefaults) {
  auto cluster = ParseClusterSpec(
      R"({"family_speed": {"hopper": 2.4, "blackwell": 5},
          "stages": [{"task": "a", "family": "hopper", "memory_bytes": 1},
                     {"task": "b", "family": "blackwell", "memory_bytes": 1}]})",
      "c");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_DOUBLE_EQ(cluster->stages[0].speed, 2.4);
  EXPECT_DOUBLE_EQ(cluster->stages[1].speed, 5.0);
}

TEST(ClusterSpecTest, AStageMayNameAModelWhoseSpeedIsTheModelsAndFamilyTheTables) {
  auto cluster = ParseClusterSpec(
      R"({"model_speed": {"h100-pcie": 2.2, "a10g": 0.4},
          "stages": [{"task": "a", "model": "h100-sxm5", "memory_bytes": 1},
                     {"task": "b", "model": "h100-pcie", "memory_bytes": 1},
                     {"task": "c", "model": "a100-pcie-40gb", "family": "ampere", "memory_bytes": 1},
                     {"task": "d", "model": "a10g", "family": "ampere", "memory_bytes": 1},
                     {"task": "e", "family": "hopper", "memory_bytes": 1}]})",
      "c");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_NEAR(cluster->stages[0].speed, 989.4 / 312, 1e-9);  // the table's H100 SXM5
  EXPECT_EQ(cluster->stages[0].family, "hopper");
  EXPECT_EQ(cluster->stages[0].model, "h100-sxm5");
  EXPECT_DOUBLE_EQ(cluster->stages[1].speed, 2.2);  // the file's measured figure wins
  EXPECT_DOUBLE_EQ(cluster->stages[2].speed, 1.0);
  EXPECT_DOUBLE_EQ(cluster->stages[3].speed, 0.4);
  EXPECT_EQ(cluster->stages[4].model, "");
  EXPECT_DOUBLE_EQ(cluster->stages[4].speed, 3.17);
  // Every model of the table has a default speed.
  EXPECT_EQ(DefaultModelSpeeds().size(), KnownGpuModels().size());
  EXPECT_LT(DefaultModelSpeeds().at("h20"), DefaultModelSpeeds().at("a100-sxm4-80gb"));
}

TEST(ClusterSpecTest, ModelErrorsNameTheJsonPath) {
  for (
      const auto& [text, path] : std::vector<std::pair<std::string, std::string>>{
          {R"({"stages": [{"task": "a", "model": "b300", "memory_bytes": 1}]})",
           "$.stages[0].model: unknown GPU model 'b300'"},
          {R"({"model_speed": {"x1": 2}, "stages": [{"task": "a", "model": "x1", "memory_bytes": 1}]})",
           "$.stages[0].family: missing: model 'x1'"},
          {R"({"stages": [{"task": "a", "model": "h200", "family": "ampere", "memory_bytes": 1}]})",
           "$.stages[0].family: 'ampere' but model 'h200' is hopper"},
          {R"({"stages": [{"task": "a", "memory_bytes": 1}]})",
           "$.stages[0].family: missing (name a family or a model)"}}) {
    auto parsed = ParseClusterSpec(text, "cluster.json");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find("cluster.json: " + path), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ClusterSpecTest, ErrorsNameTheJsonPath) {
  struct Case {
    std::string text;
    std::string path;
  };
  const Case cases[] = {
      {R"({})", "$.stages: missing"},
      {R"({"stages": [{"task": "a", "family": "volta", "memory_bytes": 1}]})",
       "$.stages[0].family: unknown GPU family 'volta'"},
      {R"({"stages": [{"task": "a", "family": "ampere"}]})", "$.stages[0].memory_bytes: missing"},
      {R"({"stages": [{"task": "a", "family": "ampere", "memory_bytes": -1}]})",
       "$.stages[0].memory_bytes: must be a number > 0"},
      {R"({"stages": [{"task": "a", "family": "ampere", "memory_bytes": 1, "count": -4}]})",
       "$.stages[0].count: must be an integer in [1, 256]"},
      {R"({"stages": [{"task": "Heavy_Stage", "family": "ampere", "memory_bytes": 1}]})",
       "$.stages[0].task: 'Heavy_Stage' is not an RFC 1123 label"},
      {R"({"stages": [{"task": "a", "family": "ampere", "memory_bytes": 1},
                      {"task": "a", "family": "hopper", "memory_bytes": 1}]})",
       "$.stages[1].family: task 'a' is on family 'ampere'"},
      {R"({"family_speed": {"hopper": -3}, "stages": [{"task": "a", "family": "ampere", "memory_bytes": 1}]})",
       "$.family_speed.hopper: must be a number > 0"},
      {R"({"label_key": "bad key!", "stages": [{"task": "a", "family": "ampere", "memory_bytes": 1}]})",
       "$.label_key: not a valid Kubernetes label key"},
      {R"({"stages": [{"task": "a", "family": "ampere", "memory_bytes": "lots"}]})",
       "$.stages[0].memory_bytes:"},
      {R"({"stages": [{"task": "a", "family": "ampere", "memory_bytes": 1, "count": 200},
                      {"task": "b", "family": "ampere", "memory_bytes": 1, "count": 100}]})",
       "$.stages[1].count: the cluster expands to more than 256 stages"},
      {R"({"stagse": []})", "$.stagse: unknown key"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseClusterSpec(c.text, "cluster.json");
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("cluster.json: " + c.path), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ClusterSpecTest, DnsLabelRules) {
  EXPECT_TRUE(IsDnsLabel("heavy-stage-workers"));
  EXPECT_TRUE(IsDnsLabel("w0"));
  EXPECT_FALSE(IsDnsLabel(""));
  EXPECT_FALSE(IsDnsLabel("-a"));
  EXPECT_FALSE(IsDnsLabel("a-"));
  EXPECT_FALSE(IsDnsLabel("A"));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
}

TEST(ClusterSpecTest, LinksByNameOrNumberWithATopLevelDefault) {
  auto cluster = ParseClusterSpec(R"({"network": "eth-100g", "nvlink": "nvlink3", "stages": [
      {"task": "a", "family": "ampere", "memory_bytes": 1e9},
      {"task": "h", "family": "hopper", "memory_bytes": 1e9, "count": 2, "network": "ib-400g",
       "nvlink": 450},
      {"task": "z", "family": "ampere", "memory_bytes": 1e9, "network": 37.5}]})",
                                  "c.json");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  ASSERT_EQ(cluster->stages.size(), 4u);
  EXPECT_EQ(cluster->stages[0].network->name, "eth-100g");
  EXPECT_EQ(cluster->stages[0].network->gb_per_s, 12.5);
  EXPECT_EQ(cluster->stages[0].nvlink->name, "nvlink3");
  EXPECT_EQ(cluster->stages[2].network->name, "ib-400g");
  EXPECT_EQ(cluster->stages[2].network->gb_per_s, 50.0);
  EXPECT_EQ(cluster->stages[2].nvlink->name, "450 GB/s");
  EXPECT_EQ(cluster->stages[3].network->gb_per_s, 37.5);
  EXPECT_EQ(cluster->stages[3].nvlink->name, "nvlink3");
  auto none = ParseClusterSpec(R"({"stages": [{"task": "a", "family": "ampere",
      "memory_bytes": 1e9}]})",
                               "c.json");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->stages[0].network.has_value());
  EXPECT_FALSE(none->stages[0].nvlink.has_value());
}

TEST(ClusterSpecTest, BadLinksNameThePathAndTheNearestKnownName) {
  auto stage = [](const std::string& field) {
    return ParseClusterSpec(
        R"({"stages": [{"task": "a", "family": "ampere", "memory_bytes": 1e9, )" + field + "}]}",
        "c.json");
  };
  auto typo = stage(R"("network": "ib-20g")");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find(
                "c.json: $.stages[0].network: unknown link 'ib-20g' (did you mean 'ib-200g'?)"),
            std::string::npos)
      << typo.status().message();
  auto nvlink = stage(R"("nvlink": "nvlink9")");
  ASSERT_FALSE(nvlink.ok());
  EXPECT_NE(nvlink.status().message().find("$.stages[0].nvlink: unknown link 'nvlink9'"),
            std::string::npos)
      << nvlink.status().message();
  auto network_as_nvlink = stage(R"("nvlink": "ib-400g")");
  ASSERT_FALSE(network_as_nvlink.ok());
  auto negative = stage(R"("network": -25)");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("$.stages[0].network: must be a number > 0"),
            std::string::npos)
      << negative.status().message();
  EXPECT_FALSE(stage(R"("network": 0)").ok());
  auto nan = stage(R"("network": "NaN")");
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("unknown link 'NaN'"), std::string::npos);
  auto list = stage(R"("network": ["ib-200g"])");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("$.stages[0].network: must be a link name"),
            std::string::npos)
      << list.status().message();
  auto top = ParseClusterSpec(R"({"network": "infiniband", "stages": []})", "c.json");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.status().message().find("$.network: unknown link"), std::string::npos);
}

TEST(ClusterSpecTest, NetworkTierAndModeAreOptionalAndChecked) {
  auto with = [](const std::string& fields) {
    return ParseClusterSpec(R"({)" + fields + R"("stages": [{"task": "a", "family": "ampere",
        "memory_bytes": 1}]})",
                            "c.json");
  };
  auto none = with("");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->network_tier.has_value());
  EXPECT_EQ(none->network_mode, "");
  auto hard = with(R"("network_tier": 2, "network_mode": "hard", )");
  ASSERT_TRUE(hard.ok()) << hard.status().ToString();
  EXPECT_EQ(*hard->network_tier, 2);
  EXPECT_EQ(hard->network_mode, "hard");
  struct Bad {
    std::string fields;
    std::string error;
  };
  for (const Bad& bad :
       std::vector<Bad>{{R"("network_tier": 0, )", "c.json: $.network_tier"},
                        {R"("network_tier": "2", )", "c.json: $.network_tier"},
                        {R"("network_tier": 1, "network_mode": "strict", )",
                         "$.network_mode: 'strict' is not one of hard, soft"},
                        {R"("network_mode": "soft", )", "$.network_mode: needs $.network_tier"}}) {
    auto parsed = with(bad.fields);
    ASSERT_FALSE(parsed.ok()) << bad.fields;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(bad.error), std::string::npos)
        << parsed.status().message();
  }
}

}  // namespace
}  // namespace hetrun::plan

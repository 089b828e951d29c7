// The measured-links fragment (`hetrun run --check-collectives` writes it, `hetrun plan --links`
// reads it): numbers only, one entry per stage, applied over the cluster file's links.
#include "hetrun/plan/links_fragment.h"

#include <gtest/gtest.h>

namespace hetrun::plan {
namespace {

ClusterSpec TwoStages() {
  Result<ClusterSpec> cluster = ParseClusterSpec(
      R"({"gpus_per_pod": 2, "network": "ib-200g", "nvlink": "nvlink3", "stages": [
           {"task": "a", "family": "ampere", "count": 1, "memory_bytes": 8e10},
           {"task": "h", "family": "hopper", "count": 1, "memory_bytes": 8e10}]})",
      "cluster.json");
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return *cluster;
}

TEST(LinksFragmentTest, PerStageFiguresReplaceTheClusterFilesLinks) {
  Result<LinksFragment> fragment = ParseLinksFragment(
      R"({"measured_by": "hetrun run --check-collectives", "world_size": 4, "nodes": 1,
          "stages": [{"stage": 0, "network": 1.5, "nvlink": 3.25}, {"stage": 1, "network": 1.5}]})",
      "links.json");
  ASSERT_TRUE(fragment.ok()) << fragment.status().ToString();
  ClusterSpec cluster = TwoStages();
  ASSERT_TRUE(ApplyLinksFragment(*fragment, "links.json", &cluster).ok());
  EXPECT_EQ(cluster.stages[0].network->gb_per_s, 1.5);
  EXPECT_EQ(cluster.stages[0].network->name, "1.5 GB/s measured");
  EXPECT_EQ(cluster.stages[0].nvlink->gb_per_s, 3.25);
  EXPECT_EQ(cluster.stages[1].network->gb_per_s, 1.5);
  EXPECT_EQ(cluster.stages[1].nvlink->name, "nvlink3");  // not measured: the file's link stays
}

TEST(LinksFragmentTest, TopLevelFigureIsEveryStagesDefault) {
  Result<LinksFragment> fragment = ParseLinksFragment(R"({"nvlink": 0.9})", "links.json");
  ASSERT_TRUE(fragment.ok()) << fragment.status().ToString();
  ClusterSpec cluster = TwoStages();
  ASSERT_TRUE(ApplyLinksFragment(*fragment, "links.json", &cluster).ok());
  EXPECT_EQ(cluster.stages[0].nvlink->gb_per_s, 0.9);
  EXPECT_EQ(cluster.stages[1].nvlink->gb_per_s, 0.9);
  EXPECT_EQ(cluster.stages[1].network->name, "ib-200g");
}

TEST(LinksFragmentTest, BadFragmentsNameTheFileAndThePath) {
  struct Case {
    const char* json;
    const char* says;
  } cases[] = {
      {R"({"network": "ib-200g"})", "$.network: must be a number of GB/s"},
      {R"({"network": 0})", "$.network"},
      {R"({"stages": [{"stage": 1, "network": 2}]})", "$.stages[0].stage: is 1"},
      {R"({"stages": [{"nvlink": -1}]})", "$.stages[0].nvlink"},
      {R"({"stages": {}})", "$.stages: must be a list"},
      {R"({"speed": 3})", "speed"},
      {"[1,", "links.json"},
  };
  for (const Case& c : cases) {
    Result<LinksFragment> fragment = ParseLinksFragment(c.json, "links.json");
    ASSERT_FALSE(fragment.ok()) << c.json;
    EXPECT_NE(fragment.status().message().find(c.says), std::string::npos)
        << c.json << " -> " << fragment.status().message();
    EXPECT_NE(fragment.status().message().find("links.json"), std::string::npos);
  }
}

TEST(LinksFragmentTest, AnotherCountOfStagesIsAnErrorNamingBoth) {
  Result<LinksFragment> fragment =
      ParseLinksFragment(R"({"stages": [{"network": 1}, {"network": 1}, {"network": 1}]})", "f");
  ASSERT_TRUE(fragment.ok());
  ClusterSpec cluster = TwoStages();
  Status applied = ApplyLinksFragment(*fragment, "f", &cluster);
  ASSERT_FALSE(applied.ok());
  EXPECT_NE(applied.message().find("3 stages, but the cluster has 2"), std::string::npos)
      << applied.message();
}

}  // namespace
}  // namespace hetrun::plan

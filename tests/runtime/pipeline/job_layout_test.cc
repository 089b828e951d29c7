#include "hetrun/pipeline/job_layout.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace hetrun::pipeline {
namespace {

JobLayout ThreeStages() {
  JobLayout layout;
  layout.num_layers = 6;
  layout.layer_names = {"embedding", "block.0", "block.1", "block.2", "block.3", "head"};
  layout.micro_batches = 4;
  layout.stages = {{0, 2, {0, 1}, {"a100", "a100"}, {0.4, 0.6}},
                   {2, 3, {2}, {"h100"}, {1.0}},
                   {5, 1, {3, 4, 5}, {"a100", "h100", "h100"}, {1, 2, 3}}};
  return layout;
}

std::string ErrorOf(const JobLayout& layout) {
  Status status = ValidateJobLayout(layout, "plan.json");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  return status.message();
}

TEST(JobLayoutTest, RanksMapToTheirStageAndReplica) {
  JobLayout layout = ThreeStages();
  ASSERT_TRUE(ValidateJobLayout(layout, "plan.json").ok());
  EXPECT_EQ(layout.world_size(), 6);
  EXPECT_EQ(layout.StageOf(1), 0);
  EXPECT_EQ(layout.ReplicaOf(1), 1);
  EXPECT_EQ(layout.StageOf(5), 2);
  EXPECT_EQ(layout.ReplicaOf(5), 2);
  EXPECT_EQ(layout.StageOf(6), -1);
}

TEST(JobLayoutTest, TheLayoutFileReadsBackUnchanged) {
  JobLayout layout = ThreeStages();
  layout.schedule = ScheduleKind::kGPipe;
  std::string text = JobLayoutJson(layout);
  Result<JobLayout> back = ParseJobLayout(text, "layout.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(JobLayoutJson(*back), text);
  EXPECT_EQ(back->schedule, ScheduleKind::kGPipe);
  EXPECT_EQ(back->stages[2].shares, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(back->stages[2].families[0], "a100");
}

TEST(JobLayoutTest, OptionalFieldsDefaultToEqualSharesAndOneF1B) {
  Result<JobLayout> layout = ParseJobLayout(
      R"({"num_layers": 3, "stages": [{"first_layer": 0, "layers": 1, "ranks": [1, 0]},
                                      {"first_layer": 1, "layers": 2, "ranks": [2]}]})",
      "layout.json");
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->micro_batches, 1);
  EXPECT_EQ(layout->schedule, ScheduleKind::k1F1B);
  EXPECT_EQ(layout->stages[0].shares, (std::vector<double>{1, 1}));
  EXPECT_EQ(layout->stages[0].ranks, (std::vector<int>{1, 0}));
}

TEST(JobLayoutTest, LayerGapsOverlapsAndCoverageNameBothSides) {
  JobLayout gap = ThreeStages();
  gap.stages[1].first_layer = 3;
  EXPECT_EQ(ErrorOf(gap),
            "plan.json: stage 1 starts at layer 3 but stage 0 ends before layer 2 (gap)");
  JobLayout overlap = ThreeStages();
  overlap.stages[1].first_layer = 1;
  EXPECT_NE(ErrorOf(overlap).find("(overlap)"), std::string::npos);
  JobLayout short_model = ThreeStages();
  short_model.num_layers = 8;
  short_model.layer_names.clear();
  EXPECT_EQ(ErrorOf(short_model),
            "plan.json: the stages cover layers [0, 6) but the model has 8 layers");
  JobLayout names = ThreeStages();
  names.layer_names.pop_back();
  EXPECT_NE(ErrorOf(names).find("5 layer names for a model of 6 layers"), std::string::npos);
}

TEST(JobLayoutTest, RanksMustPartitionTheWorld) {
  JobLayout empty = ThreeStages();
  empty.stages[1].ranks.clear();
  empty.stages[1].families.clear();
  empty.stages[1].shares.clear();
  EXPECT_EQ(ErrorOf(empty), "plan.json: stage 1 has no ranks (replicas)");
  JobLayout twice = ThreeStages();
  twice.stages[1].ranks = {1};
  EXPECT_EQ(ErrorOf(twice), "plan.json: stage 1: rank 1 is already in stage 0");
  JobLayout out_of_range = ThreeStages();
  out_of_range.stages[1].ranks = {9};
  EXPECT_NE(ErrorOf(out_of_range).find("rank 9 is not in [0, 6)"), std::string::npos);
  JobLayout shares = ThreeStages();
  shares.stages[0].shares = {1.0};
  EXPECT_EQ(ErrorOf(shares), "plan.json: stage 0 lists 1 shares for its 2 ranks");
}

TEST(JobLayoutTest, BadFilesNameTheFileAndTheField) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{"[", "not valid JSON"},
           Case{"[]", "not a JSON object"},
           Case{R"({"stages": []})", "$.num_layers: is missing"},
           Case{R"({"num_layers": 1})", "$.stages: must be an array"},
           Case{R"({"num_layers": 1, "stages": []})", "the layout has no stages"},
           Case{R"({"num_layers": 1, "schedule": "zigzag", "stages": []})", "zigzag"},
           Case{R"({"num_layers": 1, "stages": [{"first_layer": 0, "ranks": [0]}]})",
                "$.stages[0].layers: is missing"},
           Case{R"({"num_layers": 1, "stages": [{"first_layer": 0, "layers": 1, "ranks": ["a"]}]})",
                "$.stages[0].ranks"},
       }) {
    Result<JobLayout> layout = ParseJobLayout(c.text, "layout.json");
    ASSERT_FALSE(layout.ok()) << c.text;
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(layout.status().message().find("layout.json"), std::string::npos) << c.text;
    EXPECT_NE(layout.status().message().find(c.says), std::string::npos)
        << c.text << ": " << layout.status().message();
  }
}

TEST(JobLayoutTest, LayerCountsBeyondTheModelBoundOrWrappingAreRefused) {
  // Issue 28 item 9: 2^40 layers, an int64 sum that wraps and a negative num_layers were read.
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({"num_layers": 1099511627776,
                    "stages": [{"first_layer": 0, "layers": 1099511627776, "ranks": [0]}]})",
                "$.num_layers: must be an integer in [1, 4096], got 1099511627776"},
           Case{R"({"num_layers": -9223372036854775807,
                    "stages": [{"first_layer": 0, "layers": 4611686018427387904, "ranks": [0]},
                               {"first_layer": 4611686018427387904,
                                "layers": 4611686018427387905, "ranks": [1]}]})",
                "$.num_layers: must be an integer in [1, 4096], got -9223372036854775807"},
           Case{R"({"num_layers": 2,
                    "stages": [{"first_layer": 0, "layers": 4611686018427387904, "ranks": [0]},
                               {"first_layer": 4611686018427387904,
                                "layers": 4611686018427387906, "ranks": [1]}]})",
                "$.stages[0].layers: must be an integer in [1, 4096], got 4611686018427387904"},
           Case{R"({"num_layers": 2,
                    "stages": [{"first_layer": -1, "layers": 3, "ranks": [0]}]})",
                "$.stages[0].first_layer: must be an integer in [0, 4095], got -1"},
       }) {
    Result<JobLayout> layout = ParseJobLayout(c.text, "layout.json");
    ASSERT_FALSE(layout.ok()) << c.text;
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(layout.status().message().find(c.says), std::string::npos)
        << c.text << ": " << layout.status().message();
  }
  JobLayout huge = ThreeStages();
  huge.layer_names.clear();
  huge.num_layers = int64_t{1} << 40;
  huge.stages[2].layers = huge.num_layers - 5;
  EXPECT_EQ(ErrorOf(huge), "plan.json: the model has 1099511627776 layers, more than 4096");
}

TEST(JobLayoutTest, IntegersOutOfTheirRangeAreNamedNotWrapped) {
  // Issue 28 item 16: ranks [4294967296] read as rank 0; revision 2^63-1 was accepted (and
  // + 1 after a move overflowed).
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({"num_layers": 1, "stages": [{"first_layer": 0, "layers": 1,
                                                 "ranks": [4294967296]}]})",
                "$.stages[0].ranks: 4294967296 is no rank"},
           Case{R"({"num_layers": 1, "stages": [{"first_layer": 0, "layers": 1, "ranks": [-1]}]})",
                "$.stages[0].ranks: -1 is no rank"},
           Case{R"({"num_layers": 1, "revision": 9223372036854775807,
                    "stages": [{"first_layer": 0, "layers": 1, "ranks": [0]}]})",
                "$.revision: must be an integer in [0, 1099511627776], got 9223372036854775807"},
           Case{R"({"num_layers": 1, "micro_batches": 18446744073709551615,
                    "stages": [{"first_layer": 0, "layers": 1, "ranks": [0]}]})",
                "$.micro_batches: must be an integer in [1, 1048576], got 18446744073709551615"},
           Case{R"({"num_layers": 1, "min_share": 9223372036854775807,
                    "stages": [{"first_layer": 0, "layers": 1, "ranks": [0]}]})",
                "$.min_share: must be an integer in [1, 1099511627776]"},
       }) {
    Result<JobLayout> layout = ParseJobLayout(c.text, "layout.json");
    ASSERT_FALSE(layout.ok()) << c.text;
    EXPECT_NE(layout.status().message().find(c.says), std::string::npos)
        << c.text << ": " << layout.status().message();
  }
  JobLayout late = ThreeStages();
  late.revision = int64_t{1} << 41;
  EXPECT_EQ(ErrorOf(late), "plan.json: revision must be in [0, 2^40], got 2199023255552");
}

TEST(JobLayoutTest, AMissingFileIsNotFound) {
  Result<JobLayout> layout = LoadJobLayout("/nonexistent/layout.json");
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace hetrun::pipeline

namespace hetrun::pipeline {
namespace {

TEST(JobLayoutRevisionTest, RevisionAndLayerCostsReadBackAndDefaultToAPlanAsWritten) {
  JobLayout layout = ThreeStages();
  EXPECT_EQ(layout.revision, 0);
  layout.revision = 3;
  layout.layer_costs = {2.5, 1, 1, 1, 1, 0.5};
  Result<JobLayout> back = ParseJobLayout(JobLayoutJson(layout), "layout.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->revision, 3);
  EXPECT_EQ(back->layer_costs, layout.layer_costs);
  Result<JobLayout> plain = ParseJobLayout(JobLayoutJson(ThreeStages()), "layout.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->revision, 0);
  EXPECT_TRUE(plain->layer_costs.empty());
}

TEST(JobLayoutRevisionTest, BadRevisionsAndLayerCostsAreNamed) {
  JobLayout negative = ThreeStages();
  negative.revision = -1;
  EXPECT_EQ(ErrorOf(negative), "plan.json: revision must be >= 0, got -1");
  JobLayout short_costs = ThreeStages();
  short_costs.layer_costs = {1, 1};
  EXPECT_EQ(ErrorOf(short_costs), "plan.json: 2 layer costs for a model of 6 layers");
  JobLayout nan = ThreeStages();
  nan.layer_costs = {1, 1, 1, std::nan(""), 1, 1};
  EXPECT_NE(ErrorOf(nan).find("layer_costs[3] must be a finite number >= 0"), std::string::npos);
  JobLayout json = ThreeStages();
  std::string text = JobLayoutJson(json);
  text.replace(text.find("\"revision\": 0"), 13, "\"revision\": \"x\"");
  Result<JobLayout> parsed = ParseJobLayout(text, "layout.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "layout.json: $.revision: must be an integer");
}

TEST(JobLayoutRevisionTest, WriteJobLayoutFileReplacesTheFileWhole) {
  char dir_template[] = "/tmp/hetrun_layout_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/layout.json";
  JobLayout layout = ThreeStages();
  ASSERT_TRUE(WriteJobLayoutFile(layout, path).ok());
  layout.revision = 1;
  layout.stages[0].layers = 3;
  layout.stages[1].first_layer = 3;
  layout.stages[1].layers = 2;
  ASSERT_TRUE(WriteJobLayoutFile(layout, path).ok());
  Result<JobLayout> back = LoadJobLayout(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->revision, 1);
  EXPECT_EQ(back->stages[0].layers, 3);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);  // no temporary left behind
  // An invalid layout is refused before anything is written.
  layout.stages[1].layers = 9;
  Status invalid = WriteJobLayoutFile(layout, path);
  EXPECT_EQ(invalid.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadJobLayout(path)->stages[1].layers, 2);
  // A folder that does not exist: the failed call is named.
  Status missing = WriteJobLayoutFile(*back, std::string(dir_template) + "/no/layout.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("open("), std::string::npos) << missing.message();
  std::filesystem::remove_all(dir_template);
}

}  // namespace
}  // namespace hetrun::pipeline

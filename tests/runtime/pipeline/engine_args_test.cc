// A job layout's split as Megatron-LM's and torchtitan's pipeline arguments (the per-attempt
// HETRUN_MEGATRON_ARGS / HETRUN_TORCHTITAN_ARGS of `hetrun run`).
#include "hetrun/pipeline/engine_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hetrun::pipeline {
namespace {

using Args = std::vector<std::string>;

// Stages of the given layer counts, `replicas` ranks each, named embedding, block.0.., head.
JobLayout Split(const std::vector<int64_t>& counts, int replicas = 1, bool named = true) {
  JobLayout layout;
  int64_t first = 0;
  int rank = 0;
  for (int64_t count : counts) {
    StageLayout stage;
    stage.first_layer = first;
    stage.layers = count;
    for (int r = 0; r < replicas; ++r) stage.ranks.push_back(rank++);
    stage.families.assign(stage.ranks.size(), "");
    stage.shares.assign(stage.ranks.size(), 1.0);
    layout.stages.push_back(stage);
    first += count;
  }
  layout.num_layers = first;
  layout.micro_batches = 4;
  if (named) {
    layout.layer_names.push_back("embedding");
    for (int64_t k = 0; k + 2 < first; ++k)
      layout.layer_names.push_back("block." + std::to_string(k));
    layout.layer_names.push_back("head");
  }
  return layout;
}

TEST(EngineArgsTest, MegatronArgumentsFollowTheLayoutsSplitWithTheEndLayersAsEAndL) {
  Result<Args> args = MegatronArgumentsOfLayout(Split({6, 2}));
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(*args, (Args{"--pipeline-model-parallel-size", "2", "--num-layers", "6",
                         "--pipeline-model-parallel-layout", "Et*5|tL"}));
  Result<Args> moved = MegatronArgumentsOfLayout(Split({4, 4}));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->back(), "Et*3|t*3L");
}

TEST(EngineArgsTest, ALayoutWithoutNamesGetsTheEndLayersAsMarkers) {
  Result<Args> args = MegatronArgumentsOfLayout(Split({3, 5}, 1, false));
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ((*args)[3], "8");
  EXPECT_EQ(args->back(), "Et*3|t*5L");
}

TEST(EngineArgsTest, TorchtitanArgumentsListEachStagesModulesAsOneArgument) {
  JobLayout layout = Split({3, 3, 2}, 2);
  layout.schedule = ScheduleKind::kGPipe;
  Result<Args> args = TorchtitanArgumentsOfLayout(layout, plan::TorchtitanNames{});
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  EXPECT_EQ(*args,
            (Args{"--parallelism.pipeline_parallel_degree", "3",
                  "--parallelism.pipeline_parallel_schedule", "GPipe",
                  "--parallelism.module_fqns_per_model_part", "tok_embeddings,layers.0,layers.1",
                  "layers.2,layers.3,layers.4", "layers.5,norm,lm_head"}));
}

TEST(EngineArgsTest, StagesWithDifferentReplicaCountsAreRefusedNamingThem) {
  JobLayout layout = Split({4, 4}, 1);
  layout.stages[1].ranks = {1, 2};
  layout.stages[1].families = {"", ""};
  layout.stages[1].shares = {1, 1};
  for (const Result<Args>& args : {MegatronArgumentsOfLayout(layout),
                                   TorchtitanArgumentsOfLayout(layout, plan::TorchtitanNames{})}) {
    ASSERT_FALSE(args.ok());
    EXPECT_EQ(args.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(args.status().message().find("1 replica on stage(s) 0; 2 replicas on stage(s) 1"),
              std::string::npos)
        << args.status().message();
  }
}

TEST(EngineArgsTest, ArgumentLinesEndEveryArgumentWithANewline) {
  EXPECT_EQ(ArgumentLines({"--a", "x|y*2"}), "--a\nx|y*2\n");
  EXPECT_EQ(ArgumentLines({}), "");
}

}  // namespace
}  // namespace hetrun::pipeline

// `hetrun plan --emit torchtitan`: the plan's stages as torchtitan 0.3.0 module lists and flags.
// (tests/python/integrations/test_torchtitan.py parses the emitted flags with torchtitan's own
// config rules and splits a toy model with its pipeline code.)
#include "hetrun/plan/torchtitan_args.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/model_spec.h"

namespace hetrun::plan {
namespace {

ModelSpec Model(std::vector<std::string> names, int64_t micro_batches = 8) {
  ModelSpec model;
  model.micro_batches = micro_batches;
  model.micro_batch_size = 2;
  for (std::string& name : names) model.layers.push_back({std::move(name), 1.0, 1.0, 0.0});
  return model;
}

SplitFigures Split(std::vector<std::pair<int64_t, int64_t>> stages, int64_t gpus = 4) {
  SplitFigures split;
  for (size_t i = 0; i < stages.size(); ++i) {
    StageFigures stage;
    stage.stage = static_cast<int64_t>(i);
    stage.first_layer = stages[i].first;
    stage.layers = stages[i].second;
    stage.slot.gpus = gpus;
    stage.slot.task = "t" + std::to_string(i);
    split.stages.push_back(stage);
  }
  return split;
}

TEST(TorchtitanArgsTest, EndLayersBecomeTorchtitansEmbeddingAndHeadAndBlocksItsLayerIndices) {
  ModelSpec model = Model({"embedding", "block.0", "block.1", "block.2", "head"});
  auto args = TorchtitanArgsFor(Split({{0, 2}, {2, 3}}), model, TorchtitanNames{});
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(args->stages, (std::vector<std::string>{"tok_embeddings,layers.0",
                                                    "layers.1,layers.2,norm,lm_head"}));
  EXPECT_EQ(args->pipeline_degree, 2);
  EXPECT_EQ(args->data_parallel, 4);
  EXPECT_EQ(args->transformer_layers, 3);
  EXPECT_EQ(args->local_batch_size, 16);  // 8 micro-batches of 2
  std::string text = TorchtitanArgumentsText(*args, Split({{0, 2}, {2, 3}}), model, {});
  EXPECT_NE(text.find("\n--parallelism.pipeline_parallel_degree 2 "
                      "--parallelism.pipeline_parallel_schedule 1F1B "
                      "--parallelism.module_fqns_per_model_part tok_embeddings,layers.0 "
                      "layers.1,layers.2,norm,lm_head "
                      "--parallelism.pipeline_parallel_microbatch_size 2 "
                      "--training.local_batch_size 16\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.rfind("# torchtitan 0.3.0", 0), 0u) << text;
}

TEST(TorchtitanArgsTest, AModelWithoutEndLayersGetsThemAsMarkersOnTheEndStages) {
  ModelSpec model = Model({"block.0", "block.1", "block.2", "block.3"});
  auto args = TorchtitanArgsFor(Split({{0, 1}, {1, 3}}), model, TorchtitanNames{});
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(args->stages.front(), "tok_embeddings,layers.0");
  EXPECT_EQ(args->stages.back(), "layers.1,layers.2,layers.3,norm,lm_head");
  EXPECT_FALSE(args->embedding_from_model);
  std::string text = TorchtitanArgumentsText(*args, Split({{0, 1}, {1, 3}}), model, {});
  EXPECT_NE(text.find("added to the first stage (not a model layer)"), std::string::npos) << text;
}

TEST(TorchtitanArgsTest, NamesCanBeOverridden) {
  auto names = ParseTorchtitanNames("embed:blocks.{}:final_norm,output", "--torchtitan-names");
  ASSERT_TRUE(names.ok()) << names.status().message();
  ModelSpec model = Model({"embedding", "block.0", "head"});
  auto args = TorchtitanArgsFor(Split({{0, 1}, {1, 2}}), model, *names);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->stages, (std::vector<std::string>{"embed", "blocks.0,final_norm,output"}));
}

TEST(TorchtitanArgsTest, BadNamesAreRefusedNamingTheFlagAndThePart) {
  for (const char* bad : {"a:b", "a:layers:c", "a:l{}.{}:c", ":layers.{}:c", "a b:layers.{}:c",
                          "a{}:layers.{}:c", "a:layers.{},x:c"}) {
    auto names = ParseTorchtitanNames(bad, "--torchtitan-names");
    ASSERT_FALSE(names.ok()) << bad;
    EXPECT_NE(names.status().message().find("--torchtitan-names '"), std::string::npos)
        << names.status().message();
  }
}

TEST(TorchtitanArgsTest, StagesOfDifferentDataParallelSizesAreRefused) {
  ModelSpec model = Model({"embedding", "block.0", "block.1", "head"});
  SplitFigures split = Split({{0, 2}, {2, 2}});
  split.stages[1].slot.gpus = 8;
  auto args = TorchtitanArgsFor(split, model, TorchtitanNames{});
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.status().message().find("torchtitan needs the same data-parallel size"),
            std::string::npos)
      << args.status().message();
}

TEST(TorchtitanArgsTest, AMisplacedEndLayerOrNoTransformerLayerIsRefused) {
  auto misplaced = TorchtitanArgsFor(Split({{0, 2}, {2, 1}}),
                                     Model({"block.0", "embedding", "head"}), TorchtitanNames{});
  ASSERT_FALSE(misplaced.ok());
  EXPECT_NE(misplaced.status().message().find("layer 1 'embedding'"), std::string::npos);
  auto empty =
      TorchtitanArgsFor(Split({{0, 1}, {1, 1}}), Model({"embedding", "head"}), TorchtitanNames{});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no transformer layer"), std::string::npos);
}

TEST(TorchtitanArgsTest, MainCountsTokensAndNeedsTheSequenceLength) {
  ModelSpec model = Model({"embedding", "block.0", "block.1", "head"}, 8);
  auto missing = TorchtitanArgsFor(Split({{0, 2}, {2, 2}}), model, TorchtitanNames{}, "main");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sequence_length"), std::string::npos);
  model.sequence_length = 4096;
  auto args = TorchtitanArgsFor(Split({{0, 2}, {2, 2}}), model, TorchtitanNames{}, "main");
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(args->tokens_per_microbatch, 2 * 4096);  // micro_batch_size 2 x 4096
  const std::string text = TorchtitanArgumentsText(*args, Split({{0, 2}, {2, 2}}), model, {});
  EXPECT_NE(text.find("--training.num_tokens_per_microbatch_per_dp_rank 8192"), std::string::npos);
  EXPECT_NE(text.find("--parallelism.num_pp_microbatches 8"), std::string::npos);
  EXPECT_EQ(text.find("local_batch_size"), std::string::npos);
}

TEST(TorchtitanArgsTest, VersionsAreTheReleaseOrMainAndTheInstalledOneIsFound) {
  EXPECT_TRUE(ParseTorchtitanVersion("0.3.0").ok());
  EXPECT_TRUE(ParseTorchtitanVersion("main").ok());
  EXPECT_FALSE(ParseTorchtitanVersion("0.2.0").ok());
  EXPECT_EQ(TorchtitanKeysFor("0.3.0"), "0.3.0");
  EXPECT_EQ(TorchtitanKeysFor("0.4.0"), "main");
  EXPECT_EQ(TorchtitanKeysFor(""), "0.3.0");
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "venv-torchtitan";
  fs::remove_all(root);
  EXPECT_EQ(InstalledTorchtitanVersion(root.string()), "");
  fs::create_directories(root / "lib/python3.11/site-packages/torchtitan-0.3.0.dist-info");
  EXPECT_EQ(InstalledTorchtitanVersion(root.string()), "0.3.0");
  fs::remove_all(root);
}

}  // namespace
}  // namespace hetrun::plan

#include "hetrun/plan/megatron_layout.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

namespace hetrun::plan {
namespace {

// Our own reading of Megatron-Core 0.15.0's --pipeline-model-parallel-layout grammar: commas are
// dropped, "(G)*N" repeats the group G (no nesting), then "x*N" repeats one symbol, and '|' splits
// the stages; every symbol must be E, t, m or L. Throws on anything else.
std::vector<std::string> ExpandLayout(std::string text) {
  std::erase(text, ',');
  auto number = [](const std::string& in, size_t* at) {
    size_t start = *at;
    while (*at < in.size() && std::isdigit(static_cast<unsigned char>(in[*at]))) ++*at;
    if (*at == start) throw std::invalid_argument("a count must follow '*' in " + in);
    return std::stoi(in.substr(start, *at - start));
  };
  std::string groups;
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '(') {
      groups += text[i++];
      continue;
    }
    size_t close = text.find(')', i);
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != '*')
      throw std::invalid_argument("a group must be (G)*N in " + text);
    std::string group = text.substr(i + 1, close - i - 1);
    if (group.find('(') != std::string::npos) throw std::invalid_argument("nested group");
    size_t at = close + 2;
    int count = number(text, &at);
    for (int k = 0; k < count; ++k) groups += group;
    i = at;
  }
  std::string flat;
  for (size_t i = 0; i < groups.size();) {
    char symbol = groups[i++];
    if (i < groups.size() && groups[i] == '*') {
      ++i;
      int count = number(groups, &i);
      flat.append(static_cast<size_t>(count), symbol);
    } else {
      flat += symbol;
    }
  }
  std::vector<std::string> stages(1);
  for (char c : flat) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      throw std::invalid_argument(std::string("unknown symbol '") + c + "' in " + text);
    }
  }
  return stages;
}

TEST(MegatronLayoutTest, OurParserReadsMegatronsOwnExample) {
  // The documented DeepSeek-V3 example: PP16 × VPP2 = 32 stages.
  std::vector<std::string> stages = ExpandLayout("Et*3|(tt|)*29,m|L");
  ASSERT_EQ(stages.size(), 32u);
  EXPECT_EQ(stages[0], "Ettt");
  EXPECT_EQ(stages[1], "tt");
  EXPECT_EQ(stages[29], "tt");
  EXPECT_EQ(stages[30], "m");
  EXPECT_EQ(stages[31], "L");
  EXPECT_EQ(ExpandLayout("E||t|L"), (std::vector<std::string>{"E", "", "t", "L"}));
  EXPECT_THROW(ExpandLayout("Ex|L"), std::invalid_argument);
}

ModelSpec Model(std::vector<std::string> names) {
  ModelSpec model;
  model.micro_batches = 4;
  for (const std::string& name : names) model.layers.push_back({name, 1.0, 1.0});
  return model;
}

SplitFigures Split(const ModelSpec& model, std::vector<int64_t> counts,
                   std::vector<int64_t> replicas = {}) {
  ClusterSpec cluster;
  for (size_t s = 0; s < counts.size(); ++s) {
    int64_t gpus = replicas.empty() ? 8 : replicas[s];
    cluster.stages.push_back({s == 0 || s + 1 == counts.size() ? "light" : "heavy",
                              static_cast<int64_t>(s), "ampere", 1.0, 1e12, gpus});
  }
  auto split = EvaluateSplit(model, cluster, counts);
  EXPECT_TRUE(split.ok()) << split.status().ToString();
  return *split;
}

std::vector<std::string> SeedNames() {
  std::vector<std::string> names = {"embedding"};
  for (int k = 0; k < 62; ++k) names.push_back("block." + std::to_string(k));
  names.push_back("head");
  return names;
}

TEST(MegatronLayoutTest, SeedPlanExpandsBackToThePlannedStages) {
  ModelSpec model = Model(SeedNames());
  SplitFigures split = Split(model, {4, 14, 14, 14, 14, 4});
  auto layout = MegatronLayoutFor(split, model);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->layout, "Et*3|(t*14|)*4t*3L");
  EXPECT_EQ(layout->pipeline_size, 6);
  EXPECT_EQ(layout->num_layers, 62);
  EXPECT_EQ(layout->data_parallel_size, 8);
  std::vector<std::string> stages = ExpandLayout(layout->layout);
  ASSERT_EQ(stages.size(), 6u);
  EXPECT_EQ(stages[0], "Ettt");
  EXPECT_EQ(stages[1], std::string(14, 't'));
  EXPECT_EQ(stages[5], "tttL");
  ASSERT_TRUE(layout->first_last.has_value());
  EXPECT_EQ(*layout->first_last, std::make_pair(int64_t{3}, int64_t{3}));
  std::string text = MegatronArgumentsText(*layout, split, model);
  EXPECT_NE(text.find("--pipeline-model-parallel-size 6 --num-layers 62 "
                      "--pipeline-model-parallel-layout 'Et*3|(t*14|)*4t*3L'\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Megatron-Core 0.15.0"), std::string::npos);
  EXPECT_NE(text.find("E = model layer 0 'embedding'; L = model layer 63 'head'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 3"),
            std::string::npos);
}

TEST(MegatronLayoutTest, ModelWithoutEmbeddingOrHeadGetsMarkersOnTheEndStages) {
  ModelSpec model = Model({"layer.0", "layer.1", "layer.2", "layer.3", "layer.4"});
  SplitFigures split = Split(model, {1, 2, 2});
  auto layout = MegatronLayoutFor(split, model);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_FALSE(layout->embedding_from_model);
  EXPECT_FALSE(layout->head_from_model);
  EXPECT_EQ(layout->num_layers, 5);
  EXPECT_EQ(ExpandLayout(layout->layout), (std::vector<std::string>{"Et", "tt", "ttL"}));
  std::string text = MegatronArgumentsText(*layout, split, model);
  EXPECT_NE(text.find("E = Megatron's embedding on the first stage (not a model layer)"),
            std::string::npos)
      << text;
  // The older form needs equal middle stages and a transformer layer on every stage.
  EXPECT_EQ(*layout->first_last, std::make_pair(int64_t{1}, int64_t{2}));
  ModelSpec ends = Model({"embedding", "block.0", "block.1", "block.2", "block.3", "lm_head"});
  auto alone = MegatronLayoutFor(Split(ends, {1, 2, 2, 1}), ends);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->layout, "E|(t*2|)*2L");
  EXPECT_FALSE(alone->first_last.has_value());
}

TEST(MegatronLayoutTest, EndLayersElsewhereAndMtpAreRefusedNamingTheLayer) {
  ModelSpec middle = Model({"embedding", "block.0", "embedding.1", "head"});
  auto layout = MegatronLayoutFor(Split(middle, {2, 2}), middle);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find("layer 2 'embedding.1' is an embedding layer but not "
                                           "at its end of the model"),
            std::string::npos)
      << layout.status().message();
  ModelSpec early_head = Model({"embedding", "Output", "block", "block"});
  layout = MegatronLayoutFor(Split(early_head, {2, 2}), early_head);
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("layer 1 'Output' is an output layer"),
            std::string::npos)
      << layout.status().message();
  ModelSpec mtp = Model({"embedding", "block", "mtp.0", "head"});
  layout = MegatronLayoutFor(Split(mtp, {2, 2}), mtp);
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("layer 2 'mtp.0': Megatron MTP layers"),
            std::string::npos)
      << layout.status().message();
}

TEST(MegatronLayoutTest, UnevenReplicasAreRefusedNamingStagesAndCounts) {
  ModelSpec model = Model(SeedNames());
  auto layout = MegatronLayoutFor(Split(model, {4, 14, 14, 14, 14, 4}, {8, 4, 4, 4, 4, 8}), model);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find(
                "same data-parallel size on every pipeline stage, but this plan has 4 replicas "
                "on stages 1 ('heavy'), 2 ('heavy'), 3 ('heavy'), 4 ('heavy'); 8 replicas on "
                "stages 0 ('light'), 5 ('light')"),
            std::string::npos)
      << layout.status().message();
}

TEST(MegatronLayoutTest, ModelWithoutTransformerLayersIsRefusedNamingTheReason) {
  // Megatron-LM builds E and L itself: --num-layers 0 divides by zero in its layer split.
  ModelSpec ends = Model({"embedding", "head"});
  auto layout = MegatronLayoutFor(Split(ends, {1, 1}), ends);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find(
                "the model has no transformer layers (its layers 'embedding', 'head' are its "
                "embedding and output layer): Megatron-LM rejects --num-layers 0"),
            std::string::npos)
      << layout.status().message();
  ModelSpec one = Model({"embedding", "block", "head"});
  EXPECT_TRUE(MegatronLayoutFor(Split(one, {2, 1}), one).ok());
}

TEST(MegatronLayoutTest, ArgumentLinesHoldOneUnquotedArgumentEachAndNoComment) {
  ModelSpec model = Model(SeedNames());
  auto layout = MegatronLayoutFor(Split(model, {4, 14, 14, 14, 14, 4}), model);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(MegatronArgumentLines(*layout),
            "--pipeline-model-parallel-size\n6\n--num-layers\n62\n"
            "--pipeline-model-parallel-layout\nEt*3|(t*14|)*4t*3L\n");
  EXPECT_EQ(MegatronArguments(*layout).back(), "Et*3|(t*14|)*4t*3L");
}

TEST(MegatronLayoutTest, HeaderSaysWhichMegatronFlagsTheLayoutReplaces) {
  ModelSpec model = Model(SeedNames());
  SplitFigures split = Split(model, {4, 14, 14, 14, 14, 4});
  auto layout = MegatronLayoutFor(split, model);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  std::string text = MegatronArgumentsText(*layout, split, model);
  std::string header = text.substr(0, text.rfind("\n--pipeline-model-parallel-size"));
  for (const char* flag :
       {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
        "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
        "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank"}) {
    EXPECT_NE(header.find(flag), std::string::npos) << flag << " in\n" << header;
  }
  EXPECT_NE(header.find("# The layout replaces "), std::string::npos) << header;
  EXPECT_NE(header.find("refuses them together with --pipeline-model-parallel-layout"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("instead of the layout, never beside it"), std::string::npos) << header;
  EXPECT_NE(header.find("--one-per-line"), std::string::npos) << header;
}

TEST(MegatronLayoutTest, RandomSplitsExpandBackToThePlan) {
  std::mt19937_64 random(19);
  for (int trial = 0; trial < 300; ++trial) {
    int body = std::uniform_int_distribution<int>(1, 40)(random);
    bool embedding = random() % 2, head = random() % 2;
    std::vector<std::string> names;
    if (embedding) names.push_back("embedding");
    for (int k = 0; k < body; ++k) names.push_back("block." + std::to_string(k));
    if (head) names.push_back("head");
    ModelSpec model = Model(names);
    int64_t layers = static_cast<int64_t>(names.size());
    int64_t stages =
        std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(layers, 12))(random);
    // A random composition, often with runs of equal stages.
    std::vector<int64_t> counts(static_cast<size_t>(stages), 1);
    for (int64_t left = layers - stages; left > 0; --left) {
      size_t s = random() % 3 == 0 ? 0 : random() % counts.size();
      ++counts[s];
    }
    SplitFigures split = Split(model, counts);
    auto layout = MegatronLayoutFor(split, model);
    ASSERT_TRUE(layout.ok()) << layout.status().ToString();
    std::vector<std::string> expanded = ExpandLayout(layout->layout);
    ASSERT_EQ(expanded.size(), counts.size()) << layout->layout;
    std::string all;
    for (size_t s = 0; s < counts.size(); ++s) {
      std::string expected;
      for (int64_t k = split.stages[s].first_layer;
           k < split.stages[s].first_layer + split.stages[s].layers; ++k) {
        bool is_e = embedding && k == 0, is_l = head && k == layers - 1;
        expected += is_e ? 'E' : is_l ? 'L' : 't';
      }
      if (s == 0 && !embedding) expected.insert(0, "E");
      if (s + 1 == counts.size() && !head) expected += 'L';
      EXPECT_EQ(expanded[s], expected) << layout->layout << " stage " << s;
      all += expanded[s];
    }
    // Megatron's own checks: one E first, one L last, --num-layers transformer layers.
    EXPECT_EQ(all.front(), 'E');
    EXPECT_EQ(all.back(), 'L');
    EXPECT_EQ(std::count(all.begin(), all.end(), 'E'), 1);
    EXPECT_EQ(std::count(all.begin(), all.end(), 'L'), 1);
    EXPECT_EQ(std::count(all.begin(), all.end(), 't'), layout->num_layers);
    EXPECT_EQ(layout->num_layers, body);
  }
}

}  // namespace
}  // namespace hetrun::plan

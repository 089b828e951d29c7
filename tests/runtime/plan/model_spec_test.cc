#include "hetrun/plan/model_spec.h"

#include <gtest/gtest.h>

#include "run_process.h"

namespace hetrun::plan {
namespace {

Status ParseError(const std::string& text) {
  auto parsed = ParseModelSpec(text, "model.json");
  EXPECT_FALSE(parsed.ok()) << text;
  return parsed.status();
}

TEST(ModelSpecTest, ExpandsRepeatedLayersInOrder) {
  auto model = ParseModelSpec(
      R"({"micro_batches": 32, "layers": [
           {"name": "embedding", "cost": 0.6, "bytes": 2.0e9},
           {"name": "block", "repeat": 3, "cost": 1.0, "bytes": 1.1e9},
           {"name": "head", "cost": 1.4, "bytes": 2.5e9}]})",
      "model.json");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->micro_batches, 32);
  EXPECT_EQ(model->micro_batch_size, 1);
  ASSERT_EQ(model->layers.size(), 5u);
  EXPECT_EQ(model->layers[0].name, "embedding");
  EXPECT_EQ(model->layers[1].name, "block.0");
  EXPECT_EQ(model->layers[3].name, "block.2");
  EXPECT_DOUBLE_EQ(model->layers[3].bytes, 1.1e9);
  EXPECT_EQ(model->layers[4].name, "head");
}

TEST(ModelSpecTest, ReadsMicroBatchSize) {
  auto model = ParseModelSpec(
      R"({"micro_batches": 8, "micro_batch_size": 4, "layers": [{"name": "a", "cost": 1, "bytes": 0}]})",
      "m");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->micro_batch_size, 4);
}

TEST(ModelSpecTest, ErrorsNameTheJsonPath) {
  struct Case {
    std::string text;
    std::string path;
  };
  const Case cases[] = {
      {R"({"layers": [{"name": "a", "cost": 1, "bytes": 1}]})", "$.micro_batches: missing"},
      {R"({"micro_batches": -2, "layers": [{"name": "a", "cost": 1, "bytes": 1}]})",
       "$.micro_batches: must be an integer"},
      {R"({"micro_batches": 2.5, "layers": [{"name": "a", "cost": 1, "bytes": 1}]})",
       "$.micro_batches: must be an integer"},
      {R"({"micro_batches": 2})", "$.layers: missing"},
      {R"({"micro_batches": 2, "layers": []})", "$.layers: must be a non-empty list"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "cost": -1, "bytes": 1}]})",
       "$.layers[0].cost: must be a number >= 0"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "cost": 1}]})",
       "$.layers[0].bytes: missing"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "cost": 1, "bytes": 1},
           {"name": "b", "cost": 1, "bytes": -5}]})",
       "$.layers[1].bytes: must be a number >= 0"},
      {R"({"micro_batches": 2, "layers": [{"cost": 1, "bytes": 1}]})", "$.layers[0].name: missing"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "cost": "1", "bytes": 1}]})",
       "$.layers[0].cost: must be a number"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "repeat": 0, "cost": 1, "bytes": 1}]})",
       "$.layers[0].repeat: must be an integer in [1, 4096]"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "repaet": 3, "cost": 1, "bytes": 1}]})",
       "$.layers[0].repaet: unknown key"},
      {R"({"micro_batches": 2, "layers": [{"name": "a", "repeat": 4000, "cost": 1, "bytes": 1},
           {"name": "b", "repeat": 100, "cost": 1, "bytes": 1}]})",
       "$.layers[1].repeat: the model expands to more than 4096 layers"},
      {R"([1, 2])", "$: must be an object"},
  };
  for (const Case& c : cases) {
    Status status = ParseError(c.text);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(status.message().find("model.json: " + c.path), std::string::npos)
        << status.message();
  }
}

TEST(ModelSpecTest, SyntaxErrorNamesFileAndOffset) {
  Status status = ParseError(R"({"micro_batches": 2,, })");
  EXPECT_NE(status.message().find("model.json: not valid JSON (byte"), std::string::npos)
      << status.message();
}

TEST(ModelSpecTest, MissingFileIsNotFound) {
  testing::TempDir dir;
  auto model = LoadModelSpec(dir.path() + "/absent.json");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("absent.json"), std::string::npos);
}

TEST(ModelSpecTest, LoadsTheSeedExample) {
  auto model = LoadModelSpec(HETRUN_SOURCE_DIR "/examples/plan/seed-model.json");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->layers.size(), 64u);  // embedding + 62 blocks + head = the seed's 48 + 16
}

TEST(ModelSpecTest, ActivationBytesNeedTheCostUnit) {
  auto model = ParseModelSpec(
      R"({"micro_batches": 4, "cost_unit_ms": 160, "layers": [
           {"name": "embedding", "cost": 0.6, "bytes": 1, "activation_bytes": "64MiB"},
           {"name": "block", "repeat": 2, "cost": 1.0, "bytes": 1, "activation_bytes": 5e6},
           {"name": "head", "cost": 1.4, "bytes": 1}]})",
      "model.json");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->cost_unit_ms, 160.0);
  EXPECT_EQ(model->layers[0].activation_bytes, 64.0 * (1 << 20));
  EXPECT_EQ(model->layers[2].activation_bytes, 5e6);
  EXPECT_EQ(model->layers[3].activation_bytes, 0.0);
  EXPECT_TRUE(model->HasActivationBytes());

  Status missing = ParseError(R"({"micro_batches": 4, "layers": [
      {"name": "a", "cost": 1, "bytes": 1, "activation_bytes": 1e6}]})");
  EXPECT_NE(missing.message().find("model.json: $.cost_unit_ms: missing: $.layers[0]."
                                   "activation_bytes needs it"),
            std::string::npos)
      << missing.message();
  Status negative = ParseError(R"({"micro_batches": 4, "cost_unit_ms": 1, "layers": [
      {"name": "a", "cost": 1, "bytes": 1, "activation_bytes": -1}]})");
  EXPECT_NE(negative.message().find("$.layers[0].activation_bytes: must be a number >= 0"),
            std::string::npos)
      << negative.message();
  Status unit = ParseError(R"({"micro_batches": 4, "cost_unit_ms": 0, "layers": [
      {"name": "a", "cost": 1, "bytes": 1}]})");
  EXPECT_NE(unit.message().find("$.cost_unit_ms: must be a number > 0"), std::string::npos)
      << unit.message();
}

}  // namespace
}  // namespace hetrun::plan

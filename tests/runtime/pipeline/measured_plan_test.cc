#include "hetrun/pipeline/measured_plan.h"

#include <gtest/gtest.h>

namespace hetrun::pipeline {
namespace {

// 16 equal layers over 4 stages, 2 ampere then 2 hopper (datasheet 1.0 and 3.17, one GPU each);
// the run used the datasheet's split and measured hopper at 1.5x ampere.
struct Scenario {
  plan::ModelSpec model;
  plan::ClusterSpec cluster;
  Measurements measurements;
};

Scenario MakeScenario(const std::vector<int64_t>& counts, int windows) {
  Scenario sc;
  sc.model.micro_batches = 8;
  for (int l = 0; l < 16; ++l) sc.model.layers.push_back({"block." + std::to_string(l), 1.0, 1e9});
  sc.cluster.family_speed = plan::DefaultFamilySpeeds();
  for (int s = 0; s < 4; ++s) {
    plan::StageSlot slot;
    slot.task = s < 2 ? "light" : "heavy";
    slot.task_index = s % 2;
    slot.family = s < 2 ? "ampere" : "hopper";
    slot.speed = sc.cluster.family_speed[slot.family];
    slot.memory_bytes = 80e9;
    slot.gpus = 1;
    sc.cluster.stages.push_back(slot);
  }
  sc.measurements.num_layers = 16;
  sc.measurements.micro_batches = 8;
  for (const plan::LayerSpec& layer : sc.model.layers) {
    sc.measurements.layer_names.push_back(layer.name);
  }
  int64_t first = 0;
  for (int s = 0; s < 4; ++s) {
    RankMeasurements rank{s, s, 0, sc.cluster.stages[s].family, {}};
    const double ms_per_layer = s < 2 ? 1.5 : 1.0;  // hopper 1.5x ampere
    for (int w = 0; w < windows; ++w) {
      const double t = ms_per_layer * static_cast<double>(counts[s]);
      rank.windows.push_back({w, 0, first, counts[s], 8, 8, t / 3, 2 * t / 3, {}});
    }
    sc.measurements.ranks.push_back(rank);
    first += counts[s];
  }
  return sc;
}

TEST(MeasuredPlanTest, FittedSpeedsReplaceTheDatasheetAndGiveTheMeasuredOptimum) {
  Scenario sc = MakeScenario({2, 2, 6, 6}, 3);
  auto measured = PlanFromMeasurements(sc.measurements, "m.json", sc.model, sc.cluster);
  ASSERT_TRUE(measured.ok()) << measured.status().ToString();
  EXPECT_EQ(measured->windows, 3);
  ASSERT_EQ(measured->families.size(), 2u);
  EXPECT_EQ(measured->families[0].family, "ampere");
  EXPECT_DOUBLE_EQ(measured->families[0].measured, 1.0);  // the reference keeps its datasheet
  EXPECT_DOUBLE_EQ(measured->families[1].measured, 1.5);
  EXPECT_DOUBLE_EQ(measured->families[1].datasheet, 3.17);
  EXPECT_EQ(measured->families[1].stages, (std::vector<int64_t>{2, 3}));
  // Measured 3,3,6,6 ms; the fit predicts the same for the measured split.
  EXPECT_EQ(measured->plan.compared->CountsString(), "2,2,6,6");
  EXPECT_DOUBLE_EQ(measured->measured_stage_ms[2], 6.0);
  EXPECT_DOUBLE_EQ(measured->plan.compared->iteration_time, 18.0 + 7 * 6.0);
  EXPECT_DOUBLE_EQ(measured->measured_iteration_ms, 18.0 + 7 * 6.0);
  // At 1.5x: 3,3,5,5 takes 4.5,4.5,5,5 ms.
  EXPECT_EQ(measured->plan.best.CountsString(), "3,3,5,5");
  EXPECT_DOUBLE_EQ(measured->plan.best.iteration_time, 19.0 + 7 * 5.0);
  const std::string text = MeasuredPlanText(*measured);
  EXPECT_NE(text.find("measured split 2,2,6,6: predicted iteration 60.000 ms (measured 60.000"),
            std::string::npos)
      << text;
  const std::string json = MeasuredPlanJson(*measured);
  EXPECT_NE(json.find("\"new_split\": \"3,3,5,5\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"layer_costs\""), std::string::npos);
}

TEST(MeasuredPlanTest, MeasurementsOfAnotherModelOrWithoutCompleteWindowsNameTheJsonPath) {
  Scenario sc = MakeScenario({4, 4, 4, 4}, 2);
  auto error = [&](const Measurements& m) {
    auto r = PlanFromMeasurements(m, "m.json", sc.model, sc.cluster);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.ok() ? std::string() : r.status().message();
  };
  Measurements names = sc.measurements;
  names.layer_names[3] = "mlp.3";
  EXPECT_EQ(error(names),
            "m.json: $.layer_names[3]: 'mlp.3', but the model's layer 3 is 'block.3' "
            "(measurements of another model?)");
  Measurements layers = sc.measurements;
  layers.num_layers = 15;
  EXPECT_NE(error(layers).find("m.json: $.num_layers: 15 layers, but the model has 16"),
            std::string::npos);
  Measurements empty = sc.measurements;
  for (RankMeasurements& rank : empty.ranks) rank.windows.clear();
  EXPECT_NE(error(empty).find("m.json: $.ranks: no window in which every stage was measured"),
            std::string::npos);
  Measurements partial = sc.measurements;
  partial.ranks[2].windows.clear();
  EXPECT_NE(error(partial).find("no window in which every stage"), std::string::npos);
  Measurements three = sc.measurements;
  three.ranks.pop_back();
  EXPECT_NE(error(three).find("m.json: $.ranks: the measurements have 3 stages, the pipeline 4"),
            std::string::npos);
}

TEST(MeasuredPlanTest, ALayoutGivesTheModelAndThePipeline) {
  JobLayout layout;
  layout.num_layers = 4;
  layout.micro_batches = 3;
  layout.layer_costs = {2, 1, 1, 1};
  layout.stages = {{0, 2, {0, 1}, {"ampere", "ampere"}, {1, 1}}, {2, 2, {2}, {"hopper"}, {1}}};
  plan::ModelSpec model;
  plan::ClusterSpec cluster;
  SpecsFromLayout(layout, &model, &cluster);
  ASSERT_EQ(model.layers.size(), 4u);
  EXPECT_EQ(model.layers[0].cost, 2);
  EXPECT_EQ(model.layers[1].name, "layer.1");
  EXPECT_EQ(model.micro_batches, 3);
  ASSERT_EQ(cluster.stages.size(), 2u);
  EXPECT_EQ(cluster.stages[0].gpus, 2);
  EXPECT_EQ(cluster.stages[1].family, "hopper");
  EXPECT_DOUBLE_EQ(cluster.stages[1].speed, 3.17);
}

}  // namespace
}  // namespace hetrun::pipeline

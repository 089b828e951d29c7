#include "hetrun/plan/pipeline_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

namespace hetrun::plan {
namespace {

ModelSpec SeedModel() {
  ModelSpec model;
  model.micro_batches = 32;
  model.layers.push_back({"embedding", 0.6, 2.0e9});
  for (int k = 0; k < 62; ++k) model.layers.push_back({"block." + std::to_string(k), 1.0, 1.1e9});
  model.layers.push_back({"head", 1.4, 2.5e9});
  return model;
}

ClusterSpec SeedCluster(double memory = 8.0e10) {
  ClusterSpec cluster;
  cluster.family_speed = DefaultFamilySpeeds();
  cluster.stages.push_back({"light-stage-workers", 0, "ampere", 1.0, memory});
  for (int k = 0; k < 4; ++k)
    cluster.stages.push_back({"heavy-stage-workers", k, "hopper", 3.17, memory});
  cluster.stages.push_back({"light-stage-workers", 1, "ampere", 1.0, memory});
  return cluster;
}

std::vector<int64_t> Counts(const SplitFigures& split) {
  std::vector<int64_t> counts;
  for (const StageFigures& stage : split.stages) counts.push_back(stage.layers);
  return counts;
}

TEST(PipelinePlannerTest, SeedExampleGivesTheHopperStagesMostLayers) {
  const std::vector<int64_t> hand = {8, 12, 12, 12, 12, 8};
  auto plan = PlanPipeline(SeedModel(), SeedCluster(), std::span<const int64_t>(hand));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(Counts(plan->best), (std::vector<int64_t>{4, 14, 14, 14, 14, 4}));
  EXPECT_NEAR(plan->best.max_stage_time, 14 / 3.17, 1e-12);
  EXPECT_NEAR(plan->even.max_stage_time, 10.6, 1e-12);  // embedding + 10 blocks on an A100
  ASSERT_TRUE(plan->compared.has_value());
  EXPECT_NEAR(plan->compared->max_stage_time, 8.4, 1e-12);  // 7 blocks + head on an A100
  // 1F1B: Σ τ + (M − 1)·max τ.
  double sum = 3.6 + 4 * (14 / 3.17) + 4.4;
  EXPECT_NEAR(plan->best.iteration_time, sum + 31 * (14 / 3.17), 1e-9);
  EXPECT_TRUE(plan->best.fits_memory);
  EXPECT_EQ(plan->best.stages[0].first_layer, 0);
  EXPECT_EQ(plan->best.stages[5].first_layer, 60);
}

TEST(PipelinePlannerTest, BubbleOfEqualStagesIsTheTextbookFraction) {
  ModelSpec model;
  model.micro_batches = 8;
  for (int k = 0; k < 4; ++k) model.layers.push_back({"l" + std::to_string(k), 1.0, 1.0});
  ClusterSpec cluster;
  for (int k = 0; k < 4; ++k) cluster.stages.push_back({"w", k, "ampere", 1.0, 10.0});
  auto plan = PlanPipeline(model, cluster);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(plan->best.iteration_time, (8 + 4 - 1) * 1.0, 1e-12);
  EXPECT_NEAR(plan->best.bubble_fraction, 3.0 / 11.0, 1e-12);  // (S − 1)/(M + S − 1)
}

TEST(PipelinePlannerTest, MemoryLimitsMoveLayersToOtherStages) {
  // The fast stage would take everything but can hold only two layers.
  ModelSpec model;
  model.micro_batches = 4;
  for (int k = 0; k < 6; ++k) model.layers.push_back({"l" + std::to_string(k), 1.0, 10.0});
  ClusterSpec cluster;
  cluster.stages.push_back({"slow", 0, "ampere", 1.0, 100.0});
  cluster.stages.push_back({"fast", 0, "hopper", 10.0, 20.0});
  auto plan = PlanPipeline(model, cluster);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(Counts(plan->best), (std::vector<int64_t>{4, 2}));
}

TEST(PipelinePlannerTest, JobCeilingCapsEveryStage) {
  ClusterSpec cluster = SeedCluster();
  cluster.memory_ceiling_bytes = 5.0e9;  // the first stage cannot hold embedding + 3 blocks
  auto plan = PlanPipeline(SeedModel(), cluster);
  ASSERT_FALSE(plan.ok());
}

TEST(PipelinePlannerTest, StageThatCannotFitIsNamed) {
  ClusterSpec cluster = SeedCluster();
  cluster.stages[5].memory_bytes = 1.0e9;  // smaller than the head (2.5e9)
  auto plan = PlanPipeline(SeedModel(), cluster);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("stage 5 (task 'light-stage-workers' replica 1"),
            std::string::npos)
      << plan.status().message();
}

TEST(PipelinePlannerTest, FirstStageTooSmallForAnyLayerIsNamed) {
  ClusterSpec cluster = SeedCluster();
  cluster.stages[0].memory_bytes = 1.0e9;  // the embedding needs 2e9
  auto plan = PlanPipeline(SeedModel(), cluster);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("stage 0 "), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("'embedding'"), std::string::npos)
      << plan.status().message();
}

TEST(PipelinePlannerTest, MoreStagesThanLayersIsAnError) {
  ModelSpec model;
  model.micro_batches = 2;
  model.layers = {{"a", 1, 1}, {"b", 1, 1}};
  ClusterSpec cluster;
  for (int k = 0; k < 3; ++k) cluster.stages.push_back({"w", k, "ampere", 1.0, 10.0});
  auto plan = PlanPipeline(model, cluster);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("3 pipeline stages but the model has only 2 layers"),
            std::string::npos);
}

TEST(PipelinePlannerTest, ParseSplitChecksTheSum) {
  auto ok = ParseSplit("8,12,12,12,12,8", 64, 6, "--compare-split");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<int64_t>{8, 12, 12, 12, 12, 8}));
  auto sum = ParseSplit("8,12,12,12,12,9", 64, 6, "--compare-split");
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sum.status().message().find("--compare-split adds up to 65 layers, the model has 64"),
            std::string::npos);
  auto count = ParseSplit("32,32", 64, 6, "--compare-split");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("gives 2 stages, the cluster has 6"), std::string::npos);
  EXPECT_FALSE(ParseSplit("8,,12", 64, 6, "--compare-split").ok());
  EXPECT_FALSE(ParseSplit("0,64", 64, 2, "--compare-split").ok());
  EXPECT_FALSE(ParseSplit("-8,72", 64, 2, "--compare-split").ok());
  EXPECT_FALSE(ParseSplit("", 64, 2, "--compare-split").ok());
}

TEST(PipelinePlannerTest, EvenSplitGivesTheRemainderToTheFirstStages) {
  EXPECT_EQ(EvenSplit(38, 8), (std::vector<int64_t>{5, 5, 5, 5, 5, 5, 4, 4}));
  EXPECT_EQ(EvenSplit(64, 6), (std::vector<int64_t>{11, 11, 11, 11, 10, 10}));
}

// Brute force over every composition of L layers into S non-empty stages.
struct Brute {
  double best_max = std::numeric_limits<double>::infinity();
  double best_sum = std::numeric_limits<double>::infinity();
};

Brute BruteForce(const ModelSpec& model, const ClusterSpec& cluster) {
  Brute brute;
  const size_t layers = model.layers.size();
  const size_t stages = cluster.stages.size();
  std::vector<int64_t> counts(stages, 1);
  std::function<void(size_t, size_t)> visit = [&](size_t s, size_t left) {
    if (s + 1 == stages) {
      counts[s] = static_cast<int64_t>(left);
      auto split = EvaluateSplit(model, cluster, counts);
      ASSERT_TRUE(split.ok());
      if (!split->fits_memory) return;
      if (split->max_stage_time < brute.best_max ||
          (split->max_stage_time == brute.best_max && split->sum_stage_time < brute.best_sum)) {
        brute.best_max = split->max_stage_time;
        brute.best_sum = split->sum_stage_time;
      }
      return;
    }
    for (size_t n = 1; n + (stages - s - 1) <= left; ++n) {
      counts[s] = static_cast<int64_t>(n);
      visit(s + 1, left - n);
    }
  };
  visit(0, layers);
  return brute;
}

// The plan of a random case checked against brute force: nullopt (and the planner refusing) when
// no split fits, else the plan, whose slowest stage and Σ τ equal brute force's.
std::optional<PipelinePlan> PlanMatchingBruteForce(const ModelSpec& model,
                                                   const ClusterSpec& cluster, int trial) {
  Brute brute = BruteForce(model, cluster);
  auto plan = PlanPipeline(model, cluster);
  if (std::isinf(brute.best_max)) {
    EXPECT_FALSE(plan.ok()) << "trial " << trial;
    return std::nullopt;
  }
  EXPECT_TRUE(plan.ok()) << "trial " << trial << ": " << plan.status().ToString();
  if (!plan.ok()) return std::nullopt;
  EXPECT_NEAR(plan->best.max_stage_time, brute.best_max, 1e-9 * (1 + brute.best_max))
      << "trial " << trial;
  EXPECT_NEAR(plan->best.sum_stage_time, brute.best_sum, 1e-9 * (1 + brute.best_sum))
      << "trial " << trial;
  return *std::move(plan);
}

TEST(PipelinePlannerTest, MatchesBruteForceOnRandomSmallCases) {
  std::mt19937_64 random(20240601);
  int feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::uniform_int_distribution<int> layer_count(1, 10);
    ModelSpec model;
    model.micro_batches = std::uniform_int_distribution<int>(1, 16)(random);
    int layers = layer_count(random);
    for (int k = 0; k < layers; ++k) {
      // Small integers make ties frequent, which exercises the Σ τ tie-break too.
      model.layers.push_back(
          {"l" + std::to_string(k),
           static_cast<double>(std::uniform_int_distribution<int>(0, 6)(random)),
           static_cast<double>(std::uniform_int_distribution<int>(0, 5)(random))});
    }
    ClusterSpec cluster;
    int stages = std::uniform_int_distribution<int>(1, std::min(layers, 5))(random);
    const double speeds[] = {1.0, 3.17, 2.0, 0.5};
    for (int s = 0; s < stages; ++s) {
      cluster.stages.push_back(
          {"w", s, "ampere", speeds[random() % 4],
           static_cast<double>(std::uniform_int_distribution<int>(3, 20)(random))});
    }
    std::optional<PipelinePlan> plan = PlanMatchingBruteForce(model, cluster, trial);
    if (!plan) continue;
    ++feasible;
    EXPECT_TRUE(plan->best.fits_memory) << "trial " << trial;
    int64_t total = 0;
    for (const StageFigures& stage : plan->best.stages) {
      EXPECT_GE(stage.layers, 1);
      EXPECT_EQ(stage.first_layer, total);
      total += stage.layers;
    }
    EXPECT_EQ(total, layers);
  }
  EXPECT_GT(feasible, 200);
}

// Links: every stage's pod on `network`; a layer hands on `activation` bytes per sample.
ClusterSpec LinkedCluster(std::vector<double> speeds, std::vector<double> gb_per_s) {
  ClusterSpec cluster;
  for (size_t s = 0; s < speeds.size(); ++s) {
    cluster.stages.push_back({"w", static_cast<int64_t>(s), "ampere", speeds[s], 1e12});
    cluster.stages.back().network = LinkFromNumber(gb_per_s[s]);
  }
  return cluster;
}

TEST(PipelinePlannerTest, NeverCutsAfterALayerWhoseActivationsDominate) {
  // 8 equal layers over 2 equal stages: without links the cut is after layer 3. Layer 3 hands on
  // 1 GB per sample (40 ms at 25 GB/s = 4 cost units at 10 ms each): the plan cuts elsewhere.
  ModelSpec model;
  model.micro_batches = 8;
  model.micro_batch_size = 1;
  model.cost_unit_ms = 10;
  for (int k = 0; k < 8; ++k) {
    model.layers.push_back({"l" + std::to_string(k), 1.0, 1.0, k == 3 ? 1e9 : 1e6});
  }
  ClusterSpec cluster = LinkedCluster({1.0, 1.0}, {25.0, 25.0});
  auto plan = PlanPipeline(model, cluster);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->best.boundaries.size(), 1u);
  EXPECT_NE(plan->best.boundaries[0].after_layer, 3);
  EXPECT_EQ(Counts(plan->best), (std::vector<int64_t>{5, 3}));  // 5 + 0.004 vs 3 + 0.004
  // The even split cuts after layer 3 and pays 4 units forward on stage 0 and back on stage 1.
  EXPECT_EQ(plan->even.boundaries[0].after_layer, 3);
  EXPECT_NEAR(plan->even.boundaries[0].forward_ms, 40.0, 1e-9);
  EXPECT_NEAR(plan->even.stages[0].time, 4.0 + 4.0, 1e-9);
  EXPECT_NEAR(plan->even.stages[1].time, 4.0 + 4.0, 1e-9);
  EXPECT_LT(plan->best.max_stage_time, plan->even.max_stage_time);
  for (int64_t cut = 1; cut < 8; ++cut) {  // every other cut is cheaper than one after layer 3
    std::vector<int64_t> counts = {cut, 8 - cut};
    auto split = EvaluateSplit(model, cluster, counts);
    ASSERT_TRUE(split.ok());
    EXPECT_GE(split->max_stage_time, plan->best.max_stage_time - 1e-12) << cut;
  }
}

TEST(PipelinePlannerTest, BoundaryIsChargedAtTheSlowerPodsNetworkBothWays) {
  ModelSpec model;
  model.micro_batches = 4;
  model.micro_batch_size = 4;
  model.cost_unit_ms = 2;
  for (int k = 0; k < 4; ++k) model.layers.push_back({"l" + std::to_string(k), 1.0, 1.0, 5e8});
  ClusterSpec cluster = LinkedCluster({1.0, 1.0}, {50.0, 12.5});
  cluster.stages[0].network->name = "ib-400g";
  cluster.stages[1].network->name = "eth-100g";
  std::vector<int64_t> counts = {2, 2};
  auto split = EvaluateSplit(model, cluster, counts);
  ASSERT_TRUE(split.ok());
  const BoundaryFigures& b = split->boundaries.at(0);
  EXPECT_EQ(b.link->name, "eth-100g");
  EXPECT_EQ(b.bytes, 2e9);                 // 4 samples × 500 MB
  EXPECT_NEAR(b.forward_ms, 160.0, 1e-9);  // 2 GB / 12.5 GB/s
  EXPECT_NEAR(b.backward_ms, 160.0, 1e-9);
  EXPECT_NEAR(b.forward_time, 80.0, 1e-9);  // 2 ms per cost unit
  // Stage 0 sends the activations forward, stage 1 their gradients back.
  EXPECT_NEAR(split->stages[0].time, 2.0 + 80.0, 1e-9);
  EXPECT_NEAR(split->stages[1].time, 2.0 + 80.0, 1e-9);
  EXPECT_NEAR(split->stages[0].transfer_time, 80.0, 1e-9);
  // Replicas split the compute, not the pod's link.
  cluster.stages[1].gpus = 2;
  split = EvaluateSplit(model, cluster, counts);
  ASSERT_TRUE(split.ok());
  EXPECT_NEAR(split->stages[1].time, 1.0 + 80.0, 1e-9);
}

TEST(PipelinePlannerTest, BoundaryWithoutANetworkIsNotCharged) {
  ModelSpec model;
  model.micro_batches = 2;
  model.cost_unit_ms = 1;
  for (int k = 0; k < 4; ++k) model.layers.push_back({"l" + std::to_string(k), 1.0, 1.0, 1e9});
  ClusterSpec cluster;
  for (int s = 0; s < 2; ++s) cluster.stages.push_back({"w", s, "ampere", 1.0, 1e12});
  std::vector<int64_t> counts = {2, 2};
  auto split = EvaluateSplit(model, cluster, counts);
  ASSERT_TRUE(split.ok());
  EXPECT_FALSE(split->boundaries.at(0).link.has_value());
  EXPECT_EQ(split->stages[0].time, 2.0);
  // One side's network is the boundary's link.
  cluster.stages[1].network = LinkByName(NetworkLinkTable(), "eth-25g");
  split = EvaluateSplit(model, cluster, counts);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->boundaries.at(0).link->name, "eth-25g");
  EXPECT_NEAR(split->stages[0].time, 2.0 + 320.0, 1e-9);  // 1 GB at 3.125 GB/s
}

TEST(PipelinePlannerTest, MatchesBruteForceWithLinkCosts) {
  std::mt19937_64 random(20261130);
  int feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    ModelSpec model;
    model.micro_batches = std::uniform_int_distribution<int>(1, 16)(random);
    model.micro_batch_size = std::uniform_int_distribution<int>(1, 3)(random);
    model.cost_unit_ms = std::uniform_real_distribution<double>(0.5, 4.0)(random);
    int layers = std::uniform_int_distribution<int>(1, 10)(random);
    for (int k = 0; k < layers; ++k) {
      model.layers.push_back({"l" + std::to_string(k),
                              static_cast<double>(std::uniform_int_distribution<int>(0, 6)(random)),
                              static_cast<double>(std::uniform_int_distribution<int>(0, 5)(random)),
                              1e8 * std::uniform_int_distribution<int>(0, 8)(random)});
    }
    ClusterSpec cluster;
    int stages = std::uniform_int_distribution<int>(1, std::min(layers, 5))(random);
    const double speeds[] = {1.0, 3.17, 2.0, 0.5};
    const char* networks[] = {"eth-25g", "ib-200g", "ib-400g", "roce-100g", ""};
    for (int s = 0; s < stages; ++s) {
      cluster.stages.push_back(
          {"w", s, "ampere", speeds[random() % 4],
           static_cast<double>(std::uniform_int_distribution<int>(3, 20)(random)),
           std::uniform_int_distribution<int>(1, 3)(random)});
      std::string network = networks[random() % 5];
      if (!network.empty()) cluster.stages.back().network = LinkByName(NetworkLinkTable(), network);
    }
    std::optional<PipelinePlan> plan = PlanMatchingBruteForce(model, cluster, trial);
    if (!plan) continue;
    ++feasible;
    EXPECT_EQ(plan->best.boundaries.size(), static_cast<size_t>(stages - 1));
  }
  EXPECT_GT(feasible, 200);
}

TEST(PipelinePlannerTest, JsonHasTheContractKeys) {
  ModelSpec model = SeedModel();
  auto plan = PlanPipeline(model, SeedCluster());
  ASSERT_TRUE(plan.ok());
  nlohmann::json json = nlohmann::json::parse(PlanJson(*plan, model));
  ASSERT_EQ(json["stages"].size(), 6u);
  for (const char* key : {"task", "family", "first_layer", "layers", "time", "memory_bytes"}) {
    EXPECT_TRUE(json["stages"][0].contains(key)) << key;
  }
  EXPECT_EQ(json["stages"][1]["task"], "heavy-stage-workers");
  EXPECT_EQ(json["stages"][1]["layers"], 14);
  EXPECT_NEAR(json["max_stage_time"].get<double>(), 14 / 3.17, 1e-12);
  EXPECT_NEAR(json["even_split_max_stage_time"].get<double>(), 10.6, 1e-12);
  // The model's costs, for the live re-balancer (hetrun/pipeline/rebalance.h).
  ASSERT_EQ(json["layer_costs"].size(), model.layers.size());
  EXPECT_EQ(json["layer_costs"][3].get<double>(), model.layers[3].cost);
}

TEST(PipelinePlannerTest, LargestModelPlansQuickly) {
  ModelSpec model;
  model.micro_batches = 64;
  for (int64_t k = 0; k < kMaxModelLayers; ++k) model.layers.push_back({"b", 1.0 + (k % 7), 1.0});
  ClusterSpec cluster;
  for (int s = 0; s < 64; ++s) {
    cluster.stages.push_back({"w", s, s % 2 ? "hopper" : "ampere", s % 2 ? 3.17 : 1.0, 1e12});
  }
  auto plan = PlanPipeline(model, cluster);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->best.stages.size(), 64u);
}

}  // namespace
}  // namespace hetrun::plan

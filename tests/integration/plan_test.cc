// `hetrun plan` as a user runs it: exit codes, JSON, text, errors naming the input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessResult;

const std::string kModel = HETRUN_SOURCE_DIR "/examples/plan/seed-model.json";
const std::string kCluster = HETRUN_SOURCE_DIR "/examples/plan/seed-cluster.json";
const std::string kLinkedModel = HETRUN_SOURCE_DIR "/examples/plan/seed-model-links.json";

ProcessResult Hetrun(std::vector<std::string> args) {
  args.insert(args.begin(), HETRUN_BINARY);
  testing::ProcessOptions options;
  options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}};
  options.timeout = std::chrono::seconds(30);
  return testing::RunProcess(args, options);
}

TEST(PlanCliTest, SeedExampleJsonBeatsTheHandSplit) {
  ProcessResult r = Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--json",
                            "--compare-split", "8,12,12,12,12,8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["split"], "4,14,14,14,14,4");
  EXPECT_LT(plan["max_stage_time"].get<double>(),
            plan["compare_split"]["max_stage_time"].get<double>());
  EXPECT_LT(plan["max_stage_time"].get<double>(), plan["even_split_max_stage_time"].get<double>());
  EXPECT_EQ(plan["stages"][0]["task"], "light-stage-workers");
  EXPECT_EQ(plan["stages"][0]["first_layer"], 0);
  EXPECT_EQ(plan["compare_split"]["split"], "8,12,12,12,12,8");
}

TEST(PlanCliTest, TextTableShowsEveryStageAndTheComparison) {
  ProcessResult r = Hetrun(
      {"plan", "--cluster", kCluster, "--model", kModel, "--compare-split", "8,12,12,12,12,8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("heavy-stage-workers"), std::string::npos);
  EXPECT_NE(r.out.find("plan  (4,14,14,14,14,4)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("given (8,12,12,12,12,8)"), std::string::npos) << r.out;
}

TEST(PlanCliTest, SplitThatDoesNotAddUpExits78NamingTheFlag) {
  ProcessResult r = Hetrun(
      {"plan", "--cluster", kCluster, "--model", kModel, "--compare-split", "8,12,12,12,12,9"});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("--compare-split adds up to 65 layers"), std::string::npos) << r.err;
}

TEST(PlanCliTest, BadModelFileExits78WithTheJsonPath) {
  testing::TempDir dir;
  std::string model = dir.WriteFile(
      "model.json", R"({"micro_batches": 4, "layers": [{"name": "a", "cost": -1, "bytes": 1}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", kCluster, "--model", model});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("$.layers[0].cost"), std::string::npos) << r.err;
}

TEST(PlanCliTest, UnknownFamilyExits78) {
  testing::TempDir dir;
  std::string cluster = dir.WriteFile(
      "cluster.json", R"({"stages": [{"task": "w", "family": "kepler", "memory_bytes": 1e9}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", cluster, "--model", kModel});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("$.stages[0].family: unknown GPU family 'kepler'"), std::string::npos)
      << r.err;
}

TEST(PlanCliTest, MoreStagesThanLayersExits78) {
  testing::TempDir dir;
  std::string model = dir.WriteFile(
      "model.json", R"({"micro_batches": 4, "layers": [{"name": "a", "cost": 1, "bytes": 1}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", kCluster, "--model", model});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("6 pipeline stages but the model has only 1 layers"), std::string::npos)
      << r.err;
}

TEST(PlanCliTest, StageThatCannotFitExits78NamingIt) {
  testing::TempDir dir;
  std::string cluster = dir.WriteFile("cluster.json", R"({"stages": [
      {"task": "light", "family": "ampere", "memory_bytes": 8e10},
      {"task": "tiny", "family": "hopper", "memory_bytes": 1e9}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", cluster, "--model", kModel});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("stage 1 (task 'tiny'"), std::string::npos) << r.err;
}

TEST(PlanCliTest, MissingFilesAndFlags) {
  EXPECT_EQ(Hetrun({"plan", "--model", kModel}).exit_code, 64);
  EXPECT_EQ(Hetrun({"plan", "--cluster", kCluster}).exit_code, 64);
  EXPECT_EQ(Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--emit", "k8s"}).exit_code,
            64);
  ProcessResult absent = Hetrun({"plan", "--cluster", "/nonexistent/c.json", "--model", kModel});
  EXPECT_EQ(absent.exit_code, 78);
  EXPECT_NE(absent.err.find("/nonexistent/c.json"), std::string::npos) << absent.err;
}

TEST(PlanCliTest, EmitWritesTheOutputFile) {
  testing::TempDir dir;
  std::string path = dir.path() + "/job.yaml";
  ProcessResult r =
      Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--emit", "volcano", "-o", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  ProcessResult cat = testing::RunProcess({"/bin/cat", path});
  EXPECT_NE(cat.out.find("kind: Job"), std::string::npos);
  EXPECT_NE(cat.out.find("exitCode: 80"), std::string::npos);
}

TEST(PlanCliTest, LinksPerBoundaryAndCollectivesInJsonAndText) {
  ProcessResult r = Hetrun({"plan", "--cluster", kCluster, "--model", kLinkedModel, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json plan = nlohmann::json::parse(r.out);
  ASSERT_EQ(plan["boundaries"].size(), 5u);
  const nlohmann::json& first = plan["boundaries"][0];
  EXPECT_EQ(first["link"]["name"], "ib-200g");  // ampere pod (ib-200g) to hopper pod (ib-400g)
  EXPECT_EQ(first["link"]["gb_per_s"], 25.0);
  EXPECT_NEAR(first["forward_ms"].get<double>(), 64.0 * (1 << 20) / 25e9 * 1e3, 1e-9);
  EXPECT_EQ(first["forward_ms"], first["backward_ms"]);
  EXPECT_EQ(plan["boundaries"][1]["link"]["name"], "ib-400g");
  EXPECT_GT(plan["stages"][0]["transfer_time"].get<double>(), 0.0);
  EXPECT_EQ(plan["links"]["data_parallel"][0]["link"]["name"], "nvlink3");
  EXPECT_EQ(plan["links"]["data_parallel"][1]["link"]["name"], "nvlink4");
  EXPECT_EQ(plan["links"]["job"]["link"]["name"], "ib-200g");
  EXPECT_EQ(plan["links"]["job"]["fastest_link"]["name"], "ib-400g");
  EXPECT_EQ(plan["even_split"]["boundaries"].size(), 5u);

  ProcessResult text = Hetrun({"plan", "--cluster", kCluster, "--model", kLinkedModel});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("0 -> 1     block.2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ib-200g 25.0 GB/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("stage 1: 8 replicas, nvlink4 450.0 GB/s"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("job-wide collectives (every pod): ib-200g 25.0 GB/s"), std::string::npos)
      << text.out;
}

TEST(PlanCliTest, UnknownLinkExits78SuggestingTheNearestName) {
  testing::TempDir dir;
  std::string cluster = dir.WriteFile("cluster.json", R"({"stages": [
      {"task": "w", "family": "ampere", "memory_bytes": 1e12, "network": "roce-200"}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", cluster, "--model", kModel});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("$.stages[0].network: unknown link 'roce-200' (did you mean 'roce-200g'?)"),
            std::string::npos)
      << r.err;
  std::string negative = dir.WriteFile("negative.json", R"({"stages": [
      {"task": "w", "family": "ampere", "memory_bytes": 1e12, "nvlink": -300}]})");
  r = Hetrun({"plan", "--cluster", negative, "--model", kModel});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("$.stages[0].nvlink: must be a number > 0"), std::string::npos) << r.err;
}

TEST(PlanCliTest, EmitMegatronPrintsThePipelineArguments) {
  ProcessResult r =
      Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--emit", "megatron"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--pipeline-model-parallel-size 6 --num-layers 62 "
                       "--pipeline-model-parallel-layout 'Et*3|(t*14|)*4t*3L'\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# Grammar: Megatron-Core 0.15.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Data-parallel size 8 on every stage"), std::string::npos) << r.out;
  // Every line is a comment or the arguments: `grep -v '^#'` leaves what Megatron takes.
  size_t arguments = 0;
  for (size_t at = 0; at < r.out.size();) {
    size_t end = r.out.find('\n', at);
    std::string line = r.out.substr(at, end - at);
    if (line[0] != '#') ++arguments;
    at = end + 1;
  }
  EXPECT_EQ(arguments, 1u);
}

TEST(PlanCliTest, EmitMegatronRefusesUnevenReplicasWith78) {
  testing::TempDir dir;
  std::string cluster = dir.WriteFile("cluster.json", R"({"stages": [
      {"task": "light", "family": "ampere", "memory_bytes": 8e10, "gpus": 8},
      {"task": "heavy", "family": "hopper", "memory_bytes": 8e10, "gpus": 4, "count": 2}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", cluster, "--model", kModel, "--emit", "megatron"});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("Megatron-LM needs the same data-parallel size on every pipeline stage, "
                       "but this plan has 4 replicas on stages 1 ('heavy'), 2 ('heavy'); 8 "
                       "replicas on stage 0 ('light')"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(
      Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--emit", "megatron", "--json"})
          .exit_code,
      64);
  EXPECT_EQ(Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--emit", "megatron",
                    "--strict-homogeneous"})
                .exit_code,
            64);
}

// The form a script needs: `mapfile -t` gives one argument per line, none with a quote, where the
// quoted line spliced unquoted through $(...) keeps the quotes in the layout argument.
TEST(PlanCliTest, EmitMegatronOnePerLineGivesMapfileTheArgumentsWithoutQuotes) {
  testing::ProcessOptions options;
  options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"},
                                                   {"HETRUN", HETRUN_BINARY},
                                                   {"CLUSTER", kCluster},
                                                   {"MODEL", kModel}};
  options.timeout = std::chrono::seconds(30);
  const std::string plan =
      "\"$HETRUN\" plan --cluster \"$CLUSTER\" --model \"$MODEL\" "
      "--emit megatron";
  ProcessResult mapped =
      testing::RunProcess({"/bin/bash", "-c",
                           "set -euo pipefail; mapfile -t ARGS < <(" + plan +
                               " --one-per-line); printf '<%s>\\n' \"${ARGS[@]}\""},
                          options);
  ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_EQ(mapped.out,
            "<--pipeline-model-parallel-size>\n<6>\n<--num-layers>\n<62>\n"
            "<--pipeline-model-parallel-layout>\n<Et*3|(t*14|)*4t*3L>\n");
  EXPECT_EQ(mapped.out.find('\''), std::string::npos) << mapped.out;
  // The trap --one-per-line avoids: the quoted form through $(...) keeps its quotes.
  ProcessResult spliced = testing::RunProcess(
      {"/bin/bash", "-c", "set -f; set -- $(" + plan + " | grep -v '^#'); printf '<%s>\\n' \"$6\""},
      options);
  ASSERT_EQ(spliced.exit_code, 0) << spliced.err;
  EXPECT_EQ(spliced.out, "<'Et*3|(t*14|)*4t*3L'>\n");
}

TEST(PlanCliTest, EmitMegatronModelWithoutTransformerLayersExits78NamingTheReason) {
  testing::TempDir dir;
  std::string model = dir.WriteFile("model.json", R"({"micro_batches": 4, "layers": [
      {"name": "embedding", "cost": 1, "bytes": 1}, {"name": "head", "cost": 1, "bytes": 1}]})");
  std::string cluster = dir.WriteFile(
      "cluster.json", R"({"stages": [{"task": "w", "family": "hopper", "memory_bytes": 1e9}]})");
  ProcessResult r = Hetrun({"plan", "--cluster", cluster, "--model", model, "--emit", "megatron"});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("the model has no transformer layers"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Megatron-LM rejects --num-layers 0"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(PlanCliTest, OnePerLineWithoutEmitMegatronIsAUsageError) {
  ProcessResult r = Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--one-per-line"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--one-per-line goes with --emit megatron"), std::string::npos) << r.err;
  EXPECT_EQ(Hetrun({"plan", "--cluster", kCluster, "--model", kModel, "--emit", "volcano",
                    "--one-per-line"})
                .exit_code,
            64);
}

}  // namespace
}  // namespace hetrun

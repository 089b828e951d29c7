#include "hetrun/pipeline/measurements.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace hetrun::pipeline {
namespace {

// Two stages: stage 0 on ranks 0 and 1 (ampere), stage 1 on rank 2 (hopper); 6 layers.
JobLayout TwoStages() {
  JobLayout layout;
  layout.num_layers = 6;
  layout.layer_names = {"a", "b", "c", "d", "e", "f"};
  layout.micro_batches = 4;
  layout.stages = {{0, 4, {0, 1}, {"ampere", "ampere"}, {1, 1}}, {4, 2, {2}, {"hopper"}, {1}}};
  return layout;
}

WindowMeasurement Window(int64_t index, int64_t first, int64_t layers, double fwd, double bwd) {
  return {index, 0, first, layers, 8, 4, fwd, bwd, {}};
}

std::string TempDir() {
  char dir[] = "/tmp/hetrun_measure_XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  return dir;
}

TEST(MeasurementsTest, ARankLogRewritesItsFileEachWindowAndReadsBack) {
  const std::string run_dir = TempDir();
  Environment env{{"HETRUN_RUN_DIR", run_dir}};
  auto log = MeasurementLog::FromEnvironment(env, TwoStages(), 1);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->path(), run_dir + "/measurements/rank_1.json");
  WindowMeasurement w = Window(0, 0, 4, 2.0, 4.0);
  w.layer_ms = {1, 2, 1, 2};
  ASSERT_TRUE(log->Append(w).ok());
  ASSERT_TRUE(log->Append(Window(1, 0, 4, 2.5, 4.5)).ok());
  auto back = LoadMeasurements(log->path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(MeasurementsJson(*back), MeasurementsJson(log->measurements()));
  ASSERT_EQ(back->ranks.size(), 1u);
  EXPECT_EQ(back->ranks[0].rank, 1);
  EXPECT_EQ(back->ranks[0].stage, 0);
  EXPECT_EQ(back->ranks[0].replica, 1);
  EXPECT_EQ(back->ranks[0].family, "ampere");
  ASSERT_EQ(back->ranks[0].windows.size(), 2u);
  EXPECT_EQ(back->ranks[0].windows[0].layer_ms, (std::vector<double>{1, 2, 1, 2}));
  EXPECT_EQ(back->layer_names, TwoStages().layer_names);
  // Bad times are refused and not appended.
  EXPECT_FALSE(log->Append(Window(2, 0, 4, std::nan(""), 1)).ok());
  EXPECT_EQ(log->measurements().ranks[0].windows.size(), 2u);
  EXPECT_FALSE(MeasurementLog::Create(TwoStages(), 3, "").ok());
  std::filesystem::remove_all(run_dir);
}

TEST(MeasurementsTest, MalformedFilesNameTheJsonPath) {
  auto error = [](const std::string& text) {
    auto parsed = ParseMeasurements(text, "m.json");
    EXPECT_FALSE(parsed.ok()) << text;
    return parsed.ok() ? std::string() : parsed.status().message();
  };
  const std::string head = R"({"num_layers": 4, "ranks": [{"rank": 0, "stage": 0, "windows": [)";
  EXPECT_EQ(error("[1]"), "m.json: $: the measurements are not a JSON object");
  EXPECT_EQ(error("{"), "m.json: not valid JSON (byte 2)");
  EXPECT_EQ(error(R"({"num_layers": 1e999})"),
            "m.json: not valid JSON ([json.exception.out_of_range.406] number overflow parsing "
            "'1e999')");
  EXPECT_EQ(error(head + R"({"window": 0, "first_layer": 0, "layers": 4, "forward_ms": -1,
                              "backward_ms": 1}]}]})"),
            "m.json: $.ranks[0].windows[0].forward_ms: must be a finite number >= 0");
  EXPECT_EQ(error(head + R"({"window": 0, "first_layer": 2, "layers": 4, "forward_ms": 1,
                              "backward_ms": 1}]}]})"),
            "m.json: $.ranks[0].windows[0]: layers [2, 6) lie outside the model's 4 layers");
  EXPECT_EQ(error(head + R"({"window": 0, "first_layer": 0, "layers": 4, "forward_ms": 1,
                              "backward_ms": 1, "layer_ms": [1]}]}]})"),
            "m.json: $.ranks[0].windows[0].layer_ms: must list one number per layer (4)");
  EXPECT_EQ(error(head + R"({"window": 0, "attempt": -1, "first_layer": 0, "layers": 4,
                              "forward_ms": 1, "backward_ms": 1}]}]})"),
            "m.json: $.ranks[0].windows[0].attempt: must be an integer in [0, 2^40]");
  EXPECT_EQ(error(R"({"num_layers": 4, "layer_names": ["a"], "ranks": []})"),
            "m.json: $.layer_names: must list one name per layer (4)");
  EXPECT_EQ(error(R"({"num_layers": 4, "ranks": [{"rank": 0, "stage": 0, "windows": []},
                                                 {"rank": 0, "stage": 1, "windows": []}]})"),
            "m.json: $.ranks[1].rank: rank 0 appears twice");
}

TEST(MeasurementsTest, MergingKeepsEveryRankAndSkipsAnotherModelOrARepeatedRank) {
  std::vector<Measurements> parts;
  for (int rank : {2, 0, 1}) {
    auto log = MeasurementLog::Create(TwoStages(), rank, "");
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(log->Append(Window(0, rank == 2 ? 4 : 0, rank == 2 ? 2 : 4, 1, 2)).ok());
    parts.push_back(log->measurements());
  }
  Measurements other = parts[0];
  other.num_layers = 7;
  parts.push_back(other);
  parts.push_back(parts[1]);
  std::vector<std::string> names = {"r2", "r0", "r1", "other", "again"};
  std::vector<std::string> skipped;
  auto merged = MergeMeasurements(parts, names, skipped);
  ASSERT_TRUE(merged.ok());
  ASSERT_EQ(merged->ranks.size(), 3u);
  EXPECT_EQ(merged->ranks[0].rank, 0);
  EXPECT_EQ(merged->ranks[2].rank, 2);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].rfind("other: another model (7 layers", 0), 0u) << skipped[0];
  EXPECT_EQ(skipped[1], "again: repeats a rank already merged");
  std::vector<std::string> none;
  EXPECT_FALSE(MergeMeasurements({}, {}, none).ok());
}

TEST(MeasurementsTest, AStageWindowIsItsSlowestReplicaAndIncompleteWindowsAreLeftOut) {
  Measurements m{6, {}, 4, {}};
  m.ranks.push_back({0, 0, 0, "ampere", {Window(0, 0, 4, 1, 2), Window(1, 0, 4, 1, 2)}});
  m.ranks.push_back({1, 0, 1, "ampere", {Window(0, 0, 4, 2, 3), Window(1, 0, 4, 1, 1)}});
  m.ranks.push_back({2, 1, 0, "hopper", {Window(0, 4, 2, 1, 1)}});  // no window 1
  std::vector<std::string> families;
  std::vector<std::vector<StageMeasurement>> windows = StageWindows(m, &families);
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_EQ(windows[0].size(), 2u);
  EXPECT_EQ(windows[0][0].forward_ms, 2);  // rank 1: 5 ms beats rank 0's 3 ms
  EXPECT_EQ(windows[0][0].backward_ms, 3);
  EXPECT_EQ(windows[0][1].first_layer, 4);
  EXPECT_EQ(families, (std::vector<std::string>{"ampere", "hopper"}));
}

// A restarted group's worker (TORCHELASTIC_RESTART_COUNT=1, same run folder) continues its rank
// file: the first attempt's windows stay, the new ones are stamped attempt 1, and the two
// attempts' window 0 are two windows of the job, not one.
TEST(MeasurementsTest, ARestartedWorkerKeepsTheEarlierAttemptsWindows) {
  const std::string run_dir = TempDir();
  Environment first{{"HETRUN_RUN_DIR", run_dir}};
  for (int rank : {0, 2}) {
    auto log = MeasurementLog::FromEnvironment(first, TwoStages(), rank);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int64_t w : {0, 1}) {
      WindowMeasurement window = Window(w, rank == 2 ? 4 : 0, rank == 2 ? 2 : 4, 1, 2);
      window.attempt = 7;  // the log's own attempt wins
      ASSERT_TRUE(log->Append(window).ok());
    }
  }
  Environment second{{"HETRUN_RUN_DIR", run_dir}, {"TORCHELASTIC_RESTART_COUNT", "1"}};
  for (int rank : {0, 2}) {
    auto log = MeasurementLog::FromEnvironment(second, TwoStages(), rank);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_EQ(log->measurements().ranks[0].windows.size(), 2u) << "attempt 0's windows kept";
    ASSERT_TRUE(log->Append(Window(0, rank == 2 ? 4 : 0, rank == 2 ? 2 : 4, 3, 4)).ok());
  }
  auto back = LoadMeasurements(RankMeasurementsPath(run_dir, 2));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->ranks[0].windows.size(), 3u);
  EXPECT_EQ(back->ranks[0].windows[0].attempt, 0);
  EXPECT_EQ(back->ranks[0].windows[1].attempt, 0);
  EXPECT_EQ(back->ranks[0].windows[2].attempt, 1);
  EXPECT_EQ(back->ranks[0].windows[2].window, 0);
  Measurements job{6, {}, 4, {}};
  job.ranks.push_back((*LoadMeasurements(RankMeasurementsPath(run_dir, 0))).ranks[0]);
  job.ranks.push_back(back->ranks[0]);
  std::vector<std::vector<StageMeasurement>> windows = StageWindows(job, nullptr);
  ASSERT_EQ(windows.size(), 3u) << "attempt 0 windows 0, 1 and attempt 1 window 0";
  EXPECT_EQ(windows[2][0].forward_ms, 3) << "attempt 1 comes last";
  // A third attempt that lands on another stage (a new plan) starts its own file.
  JobLayout moved = TwoStages();
  moved.stages = {{0, 4, {2}, {"hopper"}, {1}}, {4, 2, {0, 1}, {"ampere", "ampere"}, {1, 1}}};
  auto other = MeasurementLog::Create(moved, 2, RankMeasurementsPath(run_dir, 2), 2);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_TRUE(other->measurements().ranks[0].windows.empty());
  // A bad restart count is an error naming the variable.
  Environment bad{{"HETRUN_RUN_DIR", run_dir}, {"TORCHELASTIC_RESTART_COUNT", "x"}};
  auto refused = MeasurementLog::FromEnvironment(bad, TwoStages(), 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("TORCHELASTIC_RESTART_COUNT=x"), std::string::npos)
      << refused.status().ToString();
  std::filesystem::remove_all(run_dir);
}

// Issue 28 item 12: Append took windows that the reader rejects (a layer range outside the model,
// window -1), so the whole rank file was skipped at the merge.
TEST(MeasurementsTest, AppendRefusesWindowsTheReaderWouldReject) {
  const std::string run_dir = TempDir();
  Environment env{{"HETRUN_RUN_DIR", run_dir}};
  auto log = MeasurementLog::FromEnvironment(env, TwoStages(), 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE(log->Append(Window(0, 0, 4, 1, 2)).ok());
  WindowMeasurement short_layer_ms = Window(3, 0, 4, 1, 2);
  short_layer_ms.layer_ms = {1};
  WindowMeasurement negative_samples = Window(4, 0, 4, 1, 2);
  negative_samples.samples = -1;
  for (const WindowMeasurement& bad :
       {Window(-1, 0, 4, 1, 2), Window(1, 4, 4, 1, 2), Window(2, 0, 0, 1, 2), short_layer_ms,
        negative_samples, Window(5, -2, 4, 1, 2)}) {
    Status refused = log->Append(bad);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << "window " << bad.window;
    EXPECT_NE(refused.message().find("measurement of window " + std::to_string(bad.window)),
              std::string::npos)
        << refused.message();
  }
  EXPECT_EQ(log->measurements().ranks[0].windows.size(), 1u);
  auto back = LoadMeasurements(log->path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ranks[0].windows.size(), 1u);
  ASSERT_TRUE(log->Append(Window(1, 0, 4, 1, 2)).ok()) << "the log keeps writing";
  std::filesystem::remove_all(run_dir);
}

const std::string kOneBadWindow =
    R"({"num_layers": 4, "ranks": [{"rank": 0, "stage": 0, "windows": [
    {"window": 0, "first_layer": 0, "layers": 4, "forward_ms": 1, "backward_ms": 2},
    {"window": 1, "first_layer": 2, "layers": 4, "forward_ms": 1, "backward_ms": 2},
    {"window": 2, "first_layer": 0, "layers": 4, "forward_ms": 3, "backward_ms": 4}]}]})";

TEST(MeasurementsTest, AFileWithABadWindowKeepsItsReadableWindowsAndNamesTheDrop) {
  std::vector<std::string> dropped;
  auto kept = ParseMeasurementsKeepingWindows(kOneBadWindow, "m.json", dropped);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->ranks[0].windows.size(), 2u);
  EXPECT_EQ(kept->ranks[0].windows[1].window, 2);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0],
            "m.json: $.ranks[0].windows[1]: layers [2, 6) lie outside the model's 4 layers");
  EXPECT_FALSE(ParseMeasurements(kOneBadWindow, "m.json").ok()) << "the strict reader stays";
  std::vector<std::string> none;
  EXPECT_FALSE(ParseMeasurementsKeepingWindows("[1]", "m.json", none).ok());
}

TEST(MeasurementsTest, ARestartKeepsTheReadableEarlierWindowsOfAFileWithABadOne) {
  const std::string run_dir = TempDir();
  JobLayout layout = TwoStages();
  layout.num_layers = 4;
  layout.layer_names.clear();
  layout.stages = {{0, 4, {0}, {"ampere"}, {1}}};
  std::filesystem::create_directories(run_dir + "/measurements");
  {
    std::ofstream file(RankMeasurementsPath(run_dir, 0));
    std::string text = kOneBadWindow;
    text.replace(text.find("\"num_layers\": 4"), 15, "\"num_layers\": 4, \"micro_batches\": 4");
    file << text;
  }
  auto log = MeasurementLog::Create(layout, 0, RankMeasurementsPath(run_dir, 0), 1);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->measurements().ranks[0].windows.size(), 2u) << "attempt 0's readable windows";
  std::filesystem::remove_all(run_dir);
}

}  // namespace
}  // namespace hetrun::pipeline

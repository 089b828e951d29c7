// `hetrun simulate` end to end: the real binary on example scenarios and on bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

ProcessResult Hetrun(std::vector<std::string> args) {
  args.insert(args.begin(), HETRUN_BINARY);
  ProcessOptions options;
  options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}};
  options.timeout = std::chrono::seconds(60);
  return RunProcess(args, options);
}

const std::string kMix = HETRUN_SOURCE_DIR "/examples/scenarios/a100_h100_mix.json";

TEST(SimulateCommandTest, JsonHasTheContractKeysAndMeetsTheGoal) {
  ProcessResult r = Hetrun({"simulate", "--scenario", kMix, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["windows"].empty());
  for (const char* key : {"window", "shares", "iteration_ms", "optimal_ms", "ratio"}) {
    EXPECT_TRUE(j["windows"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["windows"][0]["shares"].size(), 8u);
  EXPECT_LE(j["steady_ratio"].get<double>(), 1.02);
  EXPECT_LE(j["convergence_windows"].get<int>(), 3);
  const double steady = j["steady_ratio"].get<double>();
  for (const char* name : {"uniform", "static_datasheet", "proportional", "lbb"}) {
    ASSERT_TRUE(j["baselines"].contains(name)) << name;
    const nlohmann::json& b = j["baselines"][name];
    for (const char* key : {"windows", "steady_ratio", "convergence_windows",
                            "convergence_windows_by_phase", "share_changes"}) {
      EXPECT_TRUE(j.contains(key)) << key;
      EXPECT_TRUE(b.contains(key)) << name << " " << key;
    }
    // A proportional rule's fixed point is the equal-time optimum: hetrun must not lose to it by
    // more than 0.5%; it beats the others.
    if (std::string(name) == "proportional") {
      EXPECT_LE(steady, b["steady_ratio"].get<double>() * 1.005);
    } else {
      EXPECT_LT(steady, b["steady_ratio"].get<double>()) << name;
    }
  }
}

TEST(SimulateCommandTest, PlotWritesAnSvg) {
  TempDir dir;
  std::string svg = dir.path() + "/plot.svg";
  ProcessResult r = Hetrun({"simulate", "--scenario", kMix, "--plot", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hetrun"), std::string::npos);
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().rfind("<svg", 0), 0u);
  for (const char* series :
       {"hetrun", "uniform", "static_datasheet", "proportional", "lbb", "optimum"}) {
    EXPECT_NE(text.str().find(series), std::string::npos) << series;
  }
}

TEST(SimulateCommandTest, BadProfileExits78NamingTheJsonPath) {
  TempDir dir;
  std::string path = dir.WriteFile(
      "bad.json", R"({"global_batch": 8, "window": 2, "iterations": 10, "stages": [{"ranks": [
        {"family": "hopper", "ms_fixed": 1, "ms_per_sample": 1},
        {"family": "ampere", "profile": [[0, 5], [4, 9], [2, 12]]}]}]})");
  ProcessResult r = Hetrun({"simulate", "--scenario", path});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("stages[0].ranks[1].profile[2]"), std::string::npos) << r.err;
}

TEST(SimulateCommandTest, BadScenarioExits78NamingTheJsonPath) {
  TempDir dir;
  std::string path = dir.WriteFile(
      "bad.json", R"({"global_batch": 8, "window": 2, "iterations": 10, "stages": [{"ranks": [
        {"family": "hopper", "ms_fixed": 1, "ms_per_sample": 1},
        {"family": "ampere", "ms_fixed": 1, "ms_per_sample": -3}]}]})");
  ProcessResult r = Hetrun({"simulate", "--scenario", path});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("stages[0].ranks[1].ms_per_sample"), std::string::npos) << r.err;
}

TEST(SimulateCommandTest, MissingFileExits78AndMissingFlagExits64) {
  EXPECT_EQ(Hetrun({"simulate", "--scenario", "/nonexistent.json"}).exit_code, 78);
  EXPECT_EQ(Hetrun({"simulate"}).exit_code, 64);
}

}  // namespace
}  // namespace hetrun

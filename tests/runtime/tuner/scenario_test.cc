// Scenario parsing: every bad input is an error naming its JSON path.
#include "hetrun/tuner/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace hetrun::tuner {
namespace {

constexpr const char* kGood = R"({"global_batch": 512, "window": 10, "iterations": 400,
 "noise": 0.03, "seed": 1,
 "stages": [{"name": "dp", "ranks": [
   {"family": "hopper", "ms_fixed": 4.0, "ms_per_sample": 1.0, "max_samples": 512},
   {"family": "ampere", "ms_fixed": 6.0, "ms_per_sample": 3.17}]}],
 "events": [{"iteration": 200, "rank": 0, "slowdown": 2.0}]})";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

void ExpectError(const std::string& text, const std::string& path) {
  Result<Scenario> s = ParseScenario(text);
  ASSERT_FALSE(s.ok()) << "accepted: " << text;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();
}

TEST(ScenarioTest, ParsesTheDocumentedExample) {
  Result<Scenario> s = ParseScenario(kGood);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->global_batch, 512);
  EXPECT_EQ(s->total_ranks(), 2);
  EXPECT_EQ(s->stages[0].ranks[1].max_samples, 512);  // default: the global batch
  EXPECT_EQ(s->stages[0].ranks[1].ms_per_sample, 3.17);
  ASSERT_EQ(s->events.size(), 1u);
  EXPECT_EQ(s->events[0].slowdown, 2.0);
}

TEST(ScenarioTest, BadFieldsNameTheirJsonPath) {
  ExpectError(Replace(kGood, R"("ms_per_sample": 3.17)", R"("ms_per_sample": -1)"),
              "stages[0].ranks[1].ms_per_sample");
  ExpectError(Replace(kGood, R"("ms_per_sample": 3.17)", R"("ms_per_sample": 0)"),
              "stages[0].ranks[1].ms_per_sample");
  ExpectError(Replace(kGood, R"("ms_fixed": 6.0, )", ""), "stages[0].ranks[1].ms_fixed: missing");
  ExpectError(Replace(kGood, R"("ms_fixed": 6.0)", R"("ms_fixed": "6")"),
              "stages[0].ranks[1].ms_fixed");
  ExpectError(Replace(kGood, R"("family": "ampere")", R"("family": "kepler")"),
              "stages[0].ranks[1].family");
  ExpectError(Replace(kGood, R"("rank": 0)", R"("rank": 2)"), "events[0].rank");
  ExpectError(Replace(kGood, R"("iteration": 200)", R"("iteration": 400)"), "events[0].iteration");
  ExpectError(Replace(kGood, R"("slowdown": 2.0)", R"("slowdown": 0)"), "events[0].slowdown");
  ExpectError(Replace(kGood, R"("seed": 1)", R"("seed": 1, "colour": "red")"),
              "colour: unknown key");
  ExpectError(Replace(kGood, R"("name": "dp")", R"("name": "dp", "x": 1)"), "stages[0].x");
  ExpectError(Replace(kGood, R"("global_batch": 512)", R"("global_batch": 512.5)"), "global_batch");
  ExpectError(Replace(kGood, R"("window": 10)", R"("window": 0)"), "window");
  ExpectError(Replace(kGood, R"("noise": 0.03)", R"("noise": -0.1)"), "noise");
  ExpectError(Replace(kGood, R"("global_batch": 512)", R"("global_batch": 99999999999999999999)"),
              "global_batch");
}

TEST(ScenarioTest, CapsThatCannotHoldTheBatchAreAnError) {
  std::string text = Replace(kGood, R"("max_samples": 512})", R"("max_samples": 100})");
  text =
      Replace(text, R"("ms_per_sample": 3.17})", R"("ms_per_sample": 3.17, "max_samples": 100})");
  ExpectError(text, "stages[0].ranks: the ranks' max_samples add up to 200 < global_batch 512");
}

TEST(ScenarioTest, MalformedJsonAndNanAreErrors) {
  ExpectError("{", "not valid JSON");
  ExpectError(Replace(kGood, "0.03", "NaN"), "not valid JSON");
  ExpectError("[]", "(top level): must be an object");
  ExpectError(R"({"global_batch": 1, "window": 1, "iterations": 1, "stages": []})", "stages");
}

TEST(ScenarioTest, EveryExampleScenarioParses) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(HETRUN_SOURCE_DIR "/examples/scenarios")) {
    Result<Scenario> s = LoadScenario(entry.path().string());
    EXPECT_TRUE(s.ok()) << entry.path() << ": " << s.status().ToString();
    ++count;
  }
  EXPECT_GE(count, 8);
}

TEST(ScenarioTest, UnreadableFileIsNotFound) {
  Result<Scenario> s = LoadScenario("/nonexistent/scenario.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace hetrun::tuner

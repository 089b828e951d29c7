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
  ExpectError(Replace(kGood, R"("ms_per_sample": 3.17)",
                      R"("ms_per_sample": 3.17, "ms_per_micro_batch": 1)"),
              "stages[0].ranks[1].ms_per_micro_batch: needs max_micro_batch");
  ExpectError(Replace(kGood, R"("ms_per_sample": 3.17)",
                      R"("ms_per_sample": 3.17, "max_micro_batch": 8, "ms_per_micro_batch": -1)"),
              "stages[0].ranks[1].ms_per_micro_batch");
}

TEST(ScenarioTest, MicroBatchesCountAtLeastOneAndRoundUp) {
  Result<Scenario> s = ParseScenario(
      Replace(kGood, R"("ms_per_sample": 3.17)",
              R"("ms_per_sample": 3.17, "max_micro_batch": 8, "ms_per_micro_batch": 0.5)"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const ScenarioRank& rank = s->stages[0].ranks[1];
  EXPECT_EQ(rank.ms_per_micro_batch, 0.5);
  EXPECT_EQ(rank.MicroBatches(0), 1);  // an empty micro-batch still runs
  EXPECT_EQ(rank.MicroBatches(8), 1);
  EXPECT_EQ(rank.MicroBatches(9), 2);
  EXPECT_EQ(s->stages[0].ranks[0].MicroBatches(100), 0);  // no max_micro_batch
}

constexpr const char* kProfile = R"({"global_batch": 64, "window": 5, "iterations": 50,
 "spikes": {"probability": 0.02, "factor": 5},
 "stages": [{"ranks": [
   {"family": "hopper", "profile": [[0, 10], [8, 11], [24, 19]]},
   {"family": "ampere", "ms_fixed": 6.0, "ms_per_sample": 1}]}]})";

TEST(ScenarioTest, ProfileIsPiecewiseLinearAndItsLastSlopeContinues) {
  Result<Scenario> s = ParseScenario(kProfile);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const ScenarioRank& r = s->stages[0].ranks[0];
  ASSERT_EQ(r.profile.size(), 3u);
  EXPECT_DOUBLE_EQ(r.TrueMs(0), 10);
  EXPECT_DOUBLE_EQ(r.TrueMs(4), 10.5);
  EXPECT_DOUBLE_EQ(r.TrueMs(8), 11);
  EXPECT_DOUBLE_EQ(r.TrueMs(16), 15);
  EXPECT_DOUBLE_EQ(r.TrueMs(24), 19);
  EXPECT_DOUBLE_EQ(r.TrueMs(40), 27);  // slope 0.5 continues past the last point
  EXPECT_DOUBLE_EQ(s->stages[0].ranks[1].TrueMs(3), 9);
  EXPECT_EQ(s->spikes.probability, 0.02);
  EXPECT_EQ(s->spikes.factor, 5);
}

TEST(ScenarioTest, MostSamplesWithinIsTheLastCountThatFits) {
  Result<Scenario> s = ParseScenario(kProfile);
  ASSERT_TRUE(s.ok());
  const ScenarioRank& r = s->stages[0].ranks[0];
  EXPECT_EQ(r.MostSamplesWithin(9.99, 64), -1);
  EXPECT_EQ(r.MostSamplesWithin(10.5, 64), 4);
  EXPECT_EQ(r.MostSamplesWithin(15.2, 64), 16);
  EXPECT_EQ(r.MostSamplesWithin(1000, 64), 64);
  for (int64_t n = 0; n < 64; ++n) {
    EXPECT_EQ(r.MostSamplesWithin(r.TrueMs(n), 64), n) << n;
  }
}

TEST(ScenarioTest, BadProfilesAndSpikesNameTheirJsonPath) {
  const std::string p = "[[0, 10], [8, 11], [24, 19]]";
  const std::string base = kProfile;
  ExpectError(Replace(base, p, "[]"), "stages[0].ranks[0].profile");
  ExpectError(Replace(base, p, "[[0, 10]]"), "stages[0].ranks[0].profile");
  ExpectError(Replace(base, p, "[[1, 10], [8, 11]]"), "stages[0].ranks[0].profile[0]");
  ExpectError(Replace(base, p, "[[0, 10], [8, 11], [8, 12]]"), "stages[0].ranks[0].profile[2]");
  ExpectError(Replace(base, p, "[[0, 10], [9, 11], [8, 12]]"), "stages[0].ranks[0].profile[2]");
  ExpectError(Replace(base, p, "[[0, 10], [8, 9]]"), "stages[0].ranks[0].profile[1]");
  ExpectError(Replace(base, p, "[[0, -1], [8, 9]]"), "stages[0].ranks[0].profile[0]");
  ExpectError(Replace(base, p, "[[0, 10], [-8, 11]]"), "stages[0].ranks[0].profile[1]");
  ExpectError(Replace(base, p, "[[0, 10], [8]]"), "stages[0].ranks[0].profile[1]");
  ExpectError(Replace(base, p, "[[0, 10], [8.5, 11]]"), "stages[0].ranks[0].profile[1]");
  ExpectError(Replace(base, p, "{}"), "stages[0].ranks[0].profile");
  ExpectError(Replace(base, "\"profile\": " + p, "\"ms_fixed\": 1, \"profile\": " + p),
              "stages[0].ranks[0].ms_fixed");
  ExpectError(Replace(base, "\"probability\": 0.02", "\"probability\": 1.5"), "spikes.probability");
  ExpectError(Replace(base, "\"factor\": 5", "\"factor\": 0.5"), "spikes.factor");
  ExpectError(Replace(base, "\"factor\": 5", "\"factor\": 5, \"when\": 1"), "spikes.when");
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

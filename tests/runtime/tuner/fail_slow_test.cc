// FailSlowDetector on hand-made fits: family median, own history, streaks, normalisation.
#include "hetrun/tuner/fail_slow.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hetrun::tuner {
namespace {

// A hopper of fixed time 12 ms and 0.4 ms per sample scaled by `slow`, at share n.
RankFit Hopper(int64_t n, double slow = 1) {
  return {12 * slow, 0.4 * slow, 1024, n, 0};
}
RankFit Ampere(int64_t n, double slow = 1) {
  return {15 * slow, 1.0 * slow, 1024, n, 0};
}

std::vector<FailSlowVerdict> Feed(FailSlowDetector& d, const std::vector<std::string>& families,
                                  const std::vector<RankFit>& fits) {
  Result<std::vector<FailSlowVerdict>> v = d.Update(families, fits);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : std::vector<FailSlowVerdict>(fits.size());
}

const std::vector<std::string> kMix = {"hopper", "hopper", "hopper", "ampere", "ampere"};

TEST(FailSlowDetectorTest, HealthyAmperesBesideHoppersAreNeverFlagged) {
  FailSlowDetector d = *FailSlowDetector::Create({});
  for (int w = 0; w < 20; ++w) {
    auto v = Feed(d, kMix, {Hopper(240), Hopper(240), Hopper(240), Ampere(150), Ampere(150)});
    for (const FailSlowVerdict& r : v) {
      EXPECT_FALSE(r.fail_slow);
      EXPECT_NEAR(r.ratio, 1.0, 1e-12);
    }
  }
}

TEST(FailSlowDetectorTest, RankSlowerThanItsFamilyIsReportedAtTheKthWindow) {
  FailSlowDetector d = *FailSlowDetector::Create({});
  for (int w = 0; w < 5; ++w) {
    Feed(d, kMix, {Hopper(240), Hopper(240), Hopper(240), Ampere(150), Ampere(150)});
  }
  int reported_at = -1;
  for (int w = 0; w < 6; ++w) {
    // The tuner moves work off the slow rank: its share shrinks, its speed is read at the
    // family's median share all the same.
    auto v = Feed(d, kMix, {Hopper(240), Hopper(140, 2.0), Hopper(240), Ampere(150), Ampere(150)});
    if (v[1].reported) reported_at = w;
    EXPECT_EQ(v[1].fail_slow, w >= 2) << w;
    EXPECT_STREQ(v[1].basis, "model");
    EXPECT_NEAR(v[1].family_ratio, 2.0, 1e-9);
    EXPECT_EQ(v[1].reference_samples, 240);
    EXPECT_NEAR(v[1].expected_ms, 12 + 0.4 * 240, 1e-9);
    for (size_t r : {0u, 2u, 3u, 4u}) EXPECT_FALSE(v[r].fail_slow) << r;
  }
  EXPECT_EQ(reported_at, 2);
}

TEST(FailSlowDetectorTest, AStreakBrokenByAHealthyWindowStartsOver) {
  FailSlowDetector d = *FailSlowDetector::Create({});
  std::vector<RankFit> slow = {Hopper(240), Hopper(240, 1.5), Hopper(240), Ampere(150),
                               Ampere(150)};
  std::vector<RankFit> well = {Hopper(240), Hopper(240), Hopper(240), Ampere(150), Ampere(150)};
  for (const auto* fits : {&slow, &slow, &well, &slow, &slow}) {
    for (const FailSlowVerdict& v : Feed(d, kMix, *fits)) EXPECT_FALSE(v.fail_slow);
  }
  EXPECT_TRUE(Feed(d, kMix, slow)[1].reported);
}

TEST(FailSlowDetectorTest, LoneFamilyRankIsJudgedByItsOwnHistoryOnly) {
  FailSlowDetector d = *FailSlowDetector::Create({});
  const std::vector<std::string> families = {"hopper", "hopper", "hopper", "ampere"};
  for (int w = 0; w < 4; ++w) {
    auto v = Feed(d, families, {Hopper(280), Hopper(280), Hopper(280), Ampere(180)});
    EXPECT_EQ(v[3].family_ratio, 0);  // never compared with the hoppers
    EXPECT_FALSE(v[3].fail_slow);
  }
  int reported_at = -1;
  for (int w = 0; w < 4; ++w) {
    auto v = Feed(d, families, {Hopper(300), Hopper(300), Hopper(300), Ampere(120, 2.0)});
    if (v[3].reported) reported_at = w;
    EXPECT_STREQ(v[3].basis, "history");
    EXPECT_NEAR(v[3].history_ratio, 2.0, 0.05);
  }
  EXPECT_EQ(reported_at, 2);
}

TEST(FailSlowDetectorTest, WholeFamilyOrWholeJobSlowingFlagsNobody) {
  FailSlowDetector d = *FailSlowDetector::Create({});
  for (int w = 0; w < 4; ++w) {
    Feed(d, kMix, {Hopper(240), Hopper(240), Hopper(240), Ampere(150), Ampere(150)});
  }
  for (int w = 0; w < 6; ++w) {  // the amperes together (a family-wide cause)
    for (const FailSlowVerdict& v :
         Feed(d, kMix, {Hopper(260), Hopper(260), Hopper(260), Ampere(110, 1.6), Ampere(110, 1.6)}))
      EXPECT_EQ(v.streak, 0);
  }
  const std::vector<std::string> lone = {"hopper", "hopper", "ampere"};
  FailSlowDetector job = *FailSlowDetector::Create({});
  for (int w = 0; w < 4; ++w) Feed(job, lone, {Hopper(240), Hopper(240), Ampere(150)});
  for (int w = 0; w < 6; ++w) {  // a datacenter-wide throttle: every rank 1.5x
    for (const FailSlowVerdict& v :
         Feed(job, lone, {Hopper(240, 1.5), Hopper(240, 1.5), Ampere(150, 1.5)}))
      EXPECT_EQ(v.streak, 0);
  }
}

TEST(FailSlowDetectorTest, UnfittedRanksGetNoVerdict) {
  FailSlowDetector d = *FailSlowDetector::Create({});
  auto v = Feed(d, {"hopper", "hopper", "hopper"}, {Hopper(10), RankFit{}, Hopper(10)});
  EXPECT_STREQ(v[1].basis, "none");
  EXPECT_EQ(v[1].ratio, 1);
}

TEST(FailSlowDetectorTest, BadOptionsAndMismatchedSizesAreErrors) {
  EXPECT_FALSE(FailSlowDetector::Create({.threshold = 0}).ok());
  EXPECT_FALSE(FailSlowDetector::Create({.windows = 0}).ok());
  EXPECT_FALSE(FailSlowDetector::Create({.history = 1, .min_history = 2}).ok());
  FailSlowDetector d = *FailSlowDetector::Create({});
  std::vector<std::string> one = {"hopper"};
  std::vector<RankFit> two = {Hopper(1), Hopper(1)};
  Result<std::vector<FailSlowVerdict>> bad = d.Update(one, two);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("1 families for 2 fits"), std::string::npos);
  ASSERT_TRUE(d.Update(std::vector<std::string>{"h", "h"}, two).ok());
  std::vector<RankFit> three = {Hopper(1), Hopper(1), Hopper(1)};
  EXPECT_FALSE(d.Update(std::vector<std::string>{"h", "h", "h"}, three).ok());
}

}  // namespace
}  // namespace hetrun::tuner

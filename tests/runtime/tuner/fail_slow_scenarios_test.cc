// Fail-slow detection over `hetrun simulate`'s bundled scenarios (deterministic seeds, 10%
// noise): the slowed rank is reported within K windows of its change, nobody else ever is.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "hetrun/tuner/simulator.h"

namespace hetrun::tuner {
namespace {

SimulationResult Simulated(const std::string& name) {
  Result<Scenario> s = LoadScenario(HETRUN_SOURCE_DIR "/examples/scenarios/" + name + ".json");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  Result<SimulationResult> r = Simulate(*s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimulationResult{};
}

constexpr int64_t kK = FailSlowOptions{}.windows;
constexpr int64_t kChangeWindow = 20;  // the scenarios' events are at iteration 200, window 10

TEST(FailSlowScenarioTest, OneHopperSlowingIsReportedWithinKWindowsAndNoAmpereEverIs) {
  SimulationResult r = Simulated("fail_slow_one_hopper");
  ASSERT_EQ(r.fail_slow.size(), 1u);
  EXPECT_EQ(r.fail_slow[0].rank, 1);
  EXPECT_EQ(r.fail_slow[0].family, "hopper");
  EXPECT_STREQ(r.fail_slow[0].verdict.basis, "model");
  EXPECT_GE(r.fail_slow[0].window, kChangeWindow);
  EXPECT_LT(r.fail_slow[0].window, kChangeWindow + kK);
  EXPECT_NEAR(r.fail_slow[0].verdict.ratio, 2.0, 0.3);
}

TEST(FailSlowScenarioTest, WholeFamilySlowingTogetherReportsNobody) {
  EXPECT_TRUE(Simulated("fail_slow_whole_family").fail_slow.empty());
}

TEST(FailSlowScenarioTest, LoneFamilyRankSlowingIsReportedFromItsOwnHistory) {
  SimulationResult r = Simulated("fail_slow_lone_family");
  ASSERT_EQ(r.fail_slow.size(), 1u);
  EXPECT_EQ(r.fail_slow[0].rank, 3);
  EXPECT_EQ(r.fail_slow[0].family, "ampere");
  EXPECT_STREQ(r.fail_slow[0].verdict.basis, "history");
  EXPECT_GE(r.fail_slow[0].window, kChangeWindow);
  EXPECT_LT(r.fail_slow[0].window, kChangeWindow + kK);
}

// Every bundled scenario: a reported rank is one an event slowed by more than the threshold at
// or before the report, or one built slower than the rest of its family (nearly_dead_rank).
TEST(FailSlowScenarioTest, NoBundledScenarioReportsARankNoEventSlowed) {
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(HETRUN_SOURCE_DIR "/examples/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    Result<Scenario> s = LoadScenario(entry.path().string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Result<SimulationResult> r = Simulate(*s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<const ScenarioRank*> ranks;
    for (const ScenarioStage& stage : s->stages) {
      for (const ScenarioRank& rank : stage.ranks) ranks.push_back(&rank);
    }
    for (const FailSlowReport& f : r->fail_slow) {
      const ScenarioRank& me = *ranks[static_cast<size_t>(f.rank)];
      const int64_t n = f.verdict.reference_samples;
      bool slowed = false;
      for (const ScenarioRank* other : ranks) {
        slowed = slowed || (!me.PeerModel().empty() && other->PeerModel() == me.PeerModel() &&
                            me.TrueMs(n) > (1 + FailSlowOptions{}.threshold) * other->TrueMs(n));
      }
      for (const ScenarioEvent& e : s->events) {
        slowed = slowed || (e.rank == f.rank && e.slowdown > 1 + FailSlowOptions{}.threshold &&
                            e.iteration / s->window <= f.window);
      }
      EXPECT_TRUE(slowed) << entry.path().filename() << ": rank " << f.rank << " at window "
                          << f.window << " (" << f.verdict.basis << ", " << f.verdict.ratio << "x)";
    }
    ++checked;
  }
  EXPECT_GE(checked, 18);
}

}  // namespace
}  // namespace hetrun::tuner

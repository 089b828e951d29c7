#include "hetrun/job/emulated_slowdown.h"

#include <gtest/gtest.h>

namespace hetrun {
namespace {

TEST(EmulatedSlowdownTest, EmptyTextIsFullSpeed) {
  EXPECT_EQ(*ParseEmulatedSlowdown("", "ampere"), 1.0);
  EXPECT_EQ(*ParseEmulatedSlowdown("  ", ""), 1.0);
}

TEST(EmulatedSlowdownTest, SingleFactorAppliesWhateverTheFamily) {
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown("3.17", "hopper"), 3.17);
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown(" 2 ", ""), 2.0);
}

TEST(EmulatedSlowdownTest, MapLooksUpTheWorkersFamily) {
  const char* map = "ampere=3.17, hopper=1.0";
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown(map, "ampere"), 3.17);
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown(map, "hopper"), 1.0);
}

TEST(EmulatedSlowdownTest, StarEntryIsTheFactorForOtherFamilies) {
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown("hopper=1,*=2.5", "ada"), 2.5);
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown("*=2.5,hopper=1", "hopper"), 1.0);
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown("*=2.5", ""), 2.5);
}

TEST(EmulatedSlowdownTest, MapWithoutTheFamilyNamesIt) {
  Result<double> r = ParseEmulatedSlowdown("ampere=3.17", "blackwell");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'blackwell'"), std::string::npos);
}

TEST(EmulatedSlowdownTest, MapWithoutAFamilyAsksForOne) {
  Result<double> r = ParseEmulatedSlowdown("ampere=3.17", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HETRUN_GPU_FAMILY"), std::string::npos);
}

TEST(EmulatedSlowdownTest, RejectsFactorsBelowOneAndNonNumbers) {
  for (const char* text : {"0.5", "-2", "abc", "inf", "nan", "ampere=0.9", "ampere=x", "=2",
                           "ampere", "ampere=3,hopper"}) {
    Result<double> r = ParseEmulatedSlowdown(text, "ampere");
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().ToString();
    }
  }
}

TEST(EmulatedSlowdownTest, FromEnvUsesTheGpuFamilyAndNamesTheVariable) {
  EXPECT_EQ(*EmulatedSlowdownFromEnv(Environment()), 1.0);
  Environment env(
      {{"HETRUN_EMULATE_SLOWDOWN", "ampere=3.17,hopper=1.0"}, {"HETRUN_GPU_FAMILY", "ampere"}});
  EXPECT_DOUBLE_EQ(*EmulatedSlowdownFromEnv(env), 3.17);
  Result<double> bad = EmulatedSlowdownFromEnv(Environment({{"HETRUN_EMULATE_SLOWDOWN", "0"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("HETRUN_EMULATE_SLOWDOWN"), std::string::npos);
}

TEST(EmulatedSlowdownTest, RankEntryMultipliesItsFamilysFactor) {
  const char* map = "ampere=3.0,hopper=1.0,rank1=2.0";
  EXPECT_DOUBLE_EQ(ParseEmulatedSlowdownSchedule(map, "hopper", 1)->At(0), 2.0);
  EXPECT_DOUBLE_EQ(ParseEmulatedSlowdownSchedule(map, "ampere", 1)->At(0), 6.0);
  EXPECT_DOUBLE_EQ(ParseEmulatedSlowdownSchedule(map, "hopper", 0)->At(0), 1.0);
  EXPECT_DOUBLE_EQ(ParseEmulatedSlowdownSchedule("rank2=1.5", "", 2)->At(0), 1.5);  // no family
  EXPECT_DOUBLE_EQ(*ParseEmulatedSlowdown(map, "ampere"), 3.0);  // no rank: rank entries unused
}

TEST(EmulatedSlowdownTest, StartStepAppliesAnEntryFromThatStepOn) {
  Result<EmulatedSlowdown> s =
      ParseEmulatedSlowdownSchedule("ampere=3,hopper=1,rank1=2.0@step30", "hopper", 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->constant());
  EXPECT_DOUBLE_EQ(s->At(0), 1.0);
  EXPECT_DOUBLE_EQ(s->At(29), 1.0);
  EXPECT_DOUBLE_EQ(s->At(30), 2.0);
  EXPECT_DOUBLE_EQ(s->At(1000), 2.0);
  Result<EmulatedSlowdown> plain = ParseEmulatedSlowdownSchedule("2@step5", "", -1);
  ASSERT_TRUE(plain.ok());
  EXPECT_DOUBLE_EQ(plain->At(4), 1.0);
  EXPECT_DOUBLE_EQ(plain->At(5), 2.0);
  EXPECT_TRUE(ParseEmulatedSlowdownSchedule("ampere=3", "ampere", 0)->constant());
}

TEST(EmulatedSlowdownTest, BadRankOrStepEntriesNameThemselves) {
  for (const char* text : {"rankx=2", "rank-1=2", "rank1=2@30", "rank1=2@stepx", "rank1=2@step-3",
                           "rank1=0.5@step3", "hopper=1,rank=2"}) {
    Result<EmulatedSlowdown> r = ParseEmulatedSlowdownSchedule(text, "hopper", 1);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().ToString();
    }
  }
}

TEST(EmulatedSlowdownTest, ScheduleFromEnvReadsTheGlobalRank) {
  Environment env({{"HETRUN_EMULATE_SLOWDOWN", "hopper=1,rank3=2@step10"},
                   {"HETRUN_GPU_FAMILY", "hopper"},
                   {"RANK", "3"}});
  Result<EmulatedSlowdown> s = EmulatedSlowdownScheduleFromEnv(env);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->At(9), 1.0);
  EXPECT_DOUBLE_EQ(s->At(10), 2.0);
}

TEST(EmulatedSlowdownTest, PerSampleSuffixMarksTheFactorAndKeepsWholeFactorsApart) {
  const char* map = "ampere=3.17/sample,hopper=1.0,rank4=2";
  Result<EmulatedSlowdown> a100 = ParseEmulatedSlowdownSchedule(map, "ampere", 4);
  ASSERT_TRUE(a100.ok()) << a100.status().ToString();
  EXPECT_DOUBLE_EQ(a100->PerSampleAt(0), 3.17);
  EXPECT_DOUBLE_EQ(a100->WholeAt(0), 2.0);
  EXPECT_DOUBLE_EQ(a100->At(0), 6.34);  // W x S, as before for the total
  Result<EmulatedSlowdown> h100 = ParseEmulatedSlowdownSchedule(map, "hopper", 0);
  EXPECT_DOUBLE_EQ(h100->PerSampleAt(0), 1.0);
  EXPECT_DOUBLE_EQ(h100->WholeAt(0), 1.0);
  Result<EmulatedSlowdown> single = ParseEmulatedSlowdownSchedule(" 2.5 /sample ", "", -1);
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_DOUBLE_EQ(single->PerSampleAt(0), 2.5);
  EXPECT_DOUBLE_EQ(single->WholeAt(0), 1.0);
}

TEST(EmulatedSlowdownTest, FactorsWithoutTheSuffixStretchTheWholeRegionAsBefore) {
  Result<EmulatedSlowdown> s = ParseEmulatedSlowdownSchedule("ampere=3.17,hopper=1", "ampere", 0);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->WholeAt(0), 3.17);
  EXPECT_DOUBLE_EQ(s->PerSampleAt(0), 1.0);
}

TEST(EmulatedSlowdownTest, PerSampleFactorMayStartAtAStep) {
  Result<EmulatedSlowdown> s =
      ParseEmulatedSlowdownSchedule("hopper=1,rank1=2/sample@step30", "hopper", 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->constant());
  EXPECT_DOUBLE_EQ(s->PerSampleAt(29), 1.0);
  EXPECT_DOUBLE_EQ(s->PerSampleAt(30), 2.0);
  EXPECT_DOUBLE_EQ(s->WholeAt(30), 1.0);
}

TEST(EmulatedSlowdownTest, BadSuffixesNameThemselves) {
  for (const char* text : {"ampere=3/samples", "ampere=3/", "ampere=3/step", "3/sample/sample",
                           "ampere=0.5/sample", "ampere=3@step2/sample", "/sample"}) {
    Result<EmulatedSlowdown> r = ParseEmulatedSlowdownSchedule(text, "ampere", 0);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().ToString();
    }
  }
}

}  // namespace
}  // namespace hetrun

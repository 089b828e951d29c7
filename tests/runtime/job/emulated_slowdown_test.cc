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

}  // namespace
}  // namespace hetrun

#include "hetrun/base/units.h"

#include <gtest/gtest.h>

namespace hetrun {
namespace {

using std::chrono::milliseconds;

TEST(UnitsTest, ParseIntAcceptsOnlyWholeDecimalNumbers) {
  EXPECT_EQ(*ParseInt("0"), 0);
  EXPECT_EQ(*ParseInt("-12"), -12);
  EXPECT_EQ(*ParseInt("9223372036854775807"), INT64_MAX);
  for (const char* bad :
       {"", " 1", "1 ", "1.0", "0x10", "abc", "+", "12a", "9223372036854775808"}) {
    EXPECT_FALSE(ParseInt(bad).ok()) << bad;
  }
}

TEST(UnitsTest, ParseIntErrorQuotesTheValueAndEscapesBinary) {
  Result<int64_t> r = ParseInt(std::string("\x01\xff", 2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'\\x01\\xff'"), std::string::npos) << r.status().message();
}

TEST(UnitsTest, ParseIntInRangeNamesTheBounds) {
  EXPECT_EQ(*ParseIntInRange("65535", 1, 65535), 65535);
  Result<int64_t> r = ParseIntInRange("0", 1, 65535);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[1, 65535]"), std::string::npos);
}

TEST(UnitsTest, ParseDoubleRejectsNonFinite) {
  EXPECT_DOUBLE_EQ(*ParseDouble("3.17"), 3.17);
  EXPECT_DOUBLE_EQ(*ParseDouble("2.0e9"), 2.0e9);
  for (const char* bad : {"nan", "inf", "-inf", "1e999", "", "1,5"}) {
    EXPECT_FALSE(ParseDouble(bad).ok()) << bad;
  }
}

TEST(UnitsTest, DurationsAreSecondsOrCarryAUnit) {
  EXPECT_EQ(*ParseDuration("30"), milliseconds(30'000));
  EXPECT_EQ(*ParseDuration("30s"), milliseconds(30'000));
  EXPECT_EQ(*ParseDuration("1.5"), milliseconds(1'500));
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("5m"), milliseconds(300'000));
  EXPECT_EQ(*ParseDuration("1h"), milliseconds(3'600'000));
  for (const char* bad : {"", "s", "-1", "5d", "1e30", "ten", "5 m"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(UnitsTest, SizesAreBytesOrCarryAUnit) {
  EXPECT_EQ(*ParseBytes("1048576"), 1048576u);
  EXPECT_EQ(*ParseBytes("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseBytes("100GiB"), 100ull << 30);
  EXPECT_EQ(*ParseBytes("80GB"), 80'000'000'000ull);
  EXPECT_EQ(*ParseBytes("8.0e10"), 80'000'000'000ull);
  EXPECT_EQ(*ParseBytes("1.5KiB"), 1536u);
  for (const char* bad : {"", "-1", "12XB", "GiB", "1e30GiB", "nanMiB"}) {
    EXPECT_FALSE(ParseBytes(bad).ok()) << bad;
  }
}

TEST(UnitsTest, FormatsMiBAndDurations) {
  EXPECT_EQ(FormatMiB(81049ull << 20), "81049 MiB");
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(milliseconds(90'000)), "1m30s");
  EXPECT_EQ(FormatDuration(milliseconds(3'600'000)), "1h");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
}

TEST(UnitsTest, BooleansAcceptCommonSpellings) {
  EXPECT_TRUE(*ParseBool("True"));
  EXPECT_TRUE(*ParseBool("1"));
  EXPECT_FALSE(*ParseBool("off"));
  EXPECT_FALSE(ParseBool("maybe").ok());
}

}  // namespace
}  // namespace hetrun

namespace hetrun {
namespace {

TEST(UnitsTest, SplitOnKeepsEmptyPieces) {
  EXPECT_EQ(SplitOn("a,,b", ','), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(SplitOn("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(SplitOn("8.0", '.'), (std::vector<std::string_view>{"8", "0"}));
}

}  // namespace
}  // namespace hetrun

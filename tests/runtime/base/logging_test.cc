#include "hetrun/base/logging.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hetrun {
namespace {

TEST(LoggingTest, TextPrefixNamesNodeAndRankWhenKnown) {
  SetLogIdentity(-1, -1);
  EXPECT_EQ(LogPrefix(), "[hetrun]");
  SetLogIdentity(2, -1);
  EXPECT_EQ(LogPrefix(), "[hetrun node 2]");
  SetLogIdentity(2, 17);
  EXPECT_EQ(FormatLogLine(LogFormat::kText, "info", "step 5"), "[hetrun node 2 rank 17] step 5");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, "error", "peer lost"),
            "[hetrun node 2 rank 17] error: peer lost");
  SetLogIdentity(-1, -1);
}

TEST(LoggingTest, JsonLinesAreOneValidObjectEvenForBinaryMessages) {
  SetLogIdentity(0, 3);
  std::string line = FormatLogLine(LogFormat::kJson, "warning", "quote \" and \xff byte\nnewline");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["level"], "warning");
  EXPECT_EQ(parsed["node"], 0);
  EXPECT_EQ(parsed["rank"], 3);
  EXPECT_NE(parsed["msg"].get<std::string>().find("quote \" and"), std::string::npos);
  EXPECT_TRUE(parsed.contains("time"));
  SetLogIdentity(-1, -1);
}

TEST(LoggingTest, OptionsFromEnvRejectUnknownLevelAndFormat) {
  EXPECT_EQ(LogOptionsFromEnv(Environment({{"HETRUN_LOG_FORMAT", "json"}}))->format,
            LogFormat::kJson);
  Result<LogOptions> bad_level = LogOptionsFromEnv(Environment({{"HETRUN_LOG_LEVEL", "loud"}}));
  ASSERT_FALSE(bad_level.ok());
  EXPECT_NE(bad_level.status().message().find("HETRUN_LOG_LEVEL='loud'"), std::string::npos);
  Result<LogOptions> bad_format = LogOptionsFromEnv(Environment({{"HETRUN_LOG_FORMAT", "xml"}}));
  ASSERT_FALSE(bad_format.ok());
  EXPECT_NE(bad_format.status().message().find("HETRUN_LOG_FORMAT"), std::string::npos);
}

TEST(LoggingTest, ConfigureRejectsUnknownLevel) {
  EXPECT_TRUE(ConfigureLogging(LogOptions{LogFormat::kText, "debug"}).ok());
  EXPECT_FALSE(ConfigureLogging(LogOptions{LogFormat::kText, "verbose"}).ok());
}

}  // namespace
}  // namespace hetrun

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
  // Text lines start with a UTC timestamp (2026-11-30T14:29:18.123Z).
  std::string info = FormatLogLine(LogFormat::kText, "info", "step 5");
  std::string error = FormatLogLine(LogFormat::kText, "error", "peer lost");
  ASSERT_EQ(info.size(), 25u + std::string("[hetrun node 2 rank 17] step 5").size()) << info;
  EXPECT_EQ(info.substr(25), "[hetrun node 2 rank 17] step 5");
  EXPECT_EQ(error.substr(25), "[hetrun node 2 rank 17] error: peer lost");
  EXPECT_EQ(info[4], '-');
  EXPECT_EQ(info[10], 'T');
  EXPECT_EQ(info[23], 'Z');
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

TEST(LoggingTest, WorkerLinesInJsonNameRankAndStream) {
  SetLogIdentity(1, -1);
  nlohmann::json line = nlohmann::json::parse(FormatWorkerLine(4, "stdout", "loss 0.5"));
  EXPECT_EQ(line["rank"], 4);
  EXPECT_EQ(line["node"], 1);
  EXPECT_EQ(line["stream"], "stdout");
  EXPECT_EQ(line["msg"], "loss 0.5");
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

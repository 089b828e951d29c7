#include "commands/cli_global_options.h"

#include <gtest/gtest.h>

namespace hetrun::launcher {
namespace {

TEST(GlobalOptionsTest, RemovesLogOptionsAnywhereBeforeDoubleDash) {
  std::vector<std::string> args = {"env",    "--log-format",      "json",
                                   "--json", "--log-level=debug", "--",
                                   "cmd",    "--log-format",      "text"};
  Result<CliGlobalOptions> global = ExtractCliGlobalOptions(&args);
  ASSERT_TRUE(global.ok()) << global.status().ToString();
  EXPECT_EQ(global->log_format, LogFormat::kJson);
  EXPECT_EQ(global->log_level, "debug");
  EXPECT_EQ(args, (std::vector<std::string>{"env", "--json", "--", "cmd", "--log-format", "text"}));
}

TEST(GlobalOptionsTest, BadFormatOrMissingValueIsAUsageError) {
  std::vector<std::string> bad_format = {"--log-format", "xml"};
  EXPECT_EQ(ExtractCliGlobalOptions(&bad_format).status().code(), StatusCode::kUsage);
  std::vector<std::string> missing = {"env", "--log-level"};
  EXPECT_EQ(ExtractCliGlobalOptions(&missing).status().code(), StatusCode::kUsage);
}

}  // namespace
}  // namespace hetrun::launcher

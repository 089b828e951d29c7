// The real hetrun binary, run under a controlled environment (like `env -i`).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;

ProcessResult Hetrun(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), HETRUN_BINARY);
  ProcessOptions options;
  env.emplace("PATH", "/usr/bin:/bin");
  options.env = env;
  options.timeout = std::chrono::seconds(30);
  return RunProcess(args, options);
}

TEST(CliTest, VersionPrintsTheProjectVersion) {
  ProcessResult r = Hetrun({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("hetrun 0.", 0), 0u) << r.out;
}

TEST(CliTest, VersionJsonIsValid) {
  ProcessResult r = Hetrun({"version", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json parsed = nlohmann::json::parse(r.out);
  EXPECT_TRUE(parsed.contains("version"));
  EXPECT_TRUE(parsed.contains("cuda_kernels"));
}

TEST(CliTest, HelpExitsZeroAndListsSubcommands) {
  ProcessResult r = Hetrun({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos);
  EXPECT_NE(r.out.find("Environment variables:"), std::string::npos);
}

TEST(CliTest, UnknownSubcommandExits64WithTextPrefix) {
  ProcessResult r = Hetrun({"frobnicate"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("[hetrun] error: unknown subcommand 'frobnicate'"), std::string::npos)
      << r.err;
}

TEST(CliTest, JsonLogFormatMakesErrorsMachineReadable) {
  ProcessResult r = Hetrun({"--log-format", "json", "frobnicate"});
  EXPECT_EQ(r.exit_code, 64);
  std::string first_line = r.err.substr(0, r.err.find('\n'));
  nlohmann::json line = nlohmann::json::parse(first_line);
  EXPECT_EQ(line["level"], "error");
}

TEST(CliTest, BadLogFormatFlagIsUsageAndBadVariableIsConfiguration) {
  EXPECT_EQ(Hetrun({"--log-format", "xml", "version"}).exit_code, 64);
  ProcessResult r = Hetrun({"version"}, {{"HETRUN_LOG_FORMAT", "xml"}});
  EXPECT_EQ(r.exit_code, 78);
  EXPECT_NE(r.err.find("HETRUN_LOG_FORMAT"), std::string::npos) << r.err;
}

TEST(CliTest, NonZeroExitWritesTheTerminationLog) {
  testing::TempDir dir;
  std::string path = dir.path() + "/termination-log";
  ProcessResult r = Hetrun({"frobnicate"}, {{"HETRUN_TERMINATION_LOG", path}});
  EXPECT_EQ(r.exit_code, 64);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("hetrun exited with 64"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("frobnicate"), std::string::npos);
}

TEST(CliTest, SubcommandHelpWorksBothWays) {
  ProcessResult a = Hetrun({"vars", "--help"});
  ProcessResult b = Hetrun({"help", "vars"});
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("--markdown"), std::string::npos);
}

}  // namespace
}  // namespace hetrun

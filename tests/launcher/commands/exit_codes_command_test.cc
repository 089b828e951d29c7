// `hetrun exit-codes`, run as the real binary: the docs' exit-code table is its --markdown output.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrun/base/exit_code.h"
#include "run_process.h"

namespace hetrun {
namespace {

testing::ProcessResult Hetrun(std::vector<std::string> args) {
  args.insert(args.begin(), HETRUN_BINARY);
  testing::ProcessOptions options;
  options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}};
  return testing::RunProcess(args, options);
}

std::string DocsSection(const std::string& heading) {
  std::ifstream in(std::string(HETRUN_SOURCE_DIR) + "/docs/reference/exit-codes.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string readme = text.str();
  size_t begin = readme.find(heading + "\n");
  if (begin == std::string::npos) return "";
  size_t end = readme.find("\n## ", begin + 1);
  return readme.substr(begin, end - begin);
}

TEST(ExitCodesCommandTest, MarkdownIsTheExitCodesPagesTable) {
  testing::ProcessResult r = Hetrun({"exit-codes", "--markdown"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ExitCodeMarkdown());
  std::string section = DocsSection("# Exit codes");
  ASSERT_FALSE(section.empty()) << "docs/reference/exit-codes.md has no '# Exit codes'";
  EXPECT_NE(section.find("\n" + r.out + "\n"), std::string::npos)
      << "docs/reference/exit-codes.md's table is not `hetrun exit-codes --markdown`:\n"
      << r.out;
}

TEST(ExitCodesCommandTest, JsonListsRowsAndPoliciesInTableOrder) {
  testing::ProcessResult r = Hetrun({"exit-codes", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["exit_codes"].size(), ExitCodeTable().size());
  EXPECT_EQ(doc["exit_codes"][0]["code"], "0");
  EXPECT_EQ(doc["exit_codes"][0]["value"], 0);
  EXPECT_EQ(doc["exit_codes"][0]["constant"], "kExitOk");
  for (const nlohmann::json& row : doc["exit_codes"]) {
    EXPECT_TRUE(row.contains("meaning") && row.contains("action") && row.contains("policy"));
  }
  const nlohmann::json& policies = doc["policies"];
  ASSERT_EQ(policies.size(), VolcanoPolicies().size());
  EXPECT_EQ(policies.back(), (nlohmann::json{{"event", "PodFailed"}, {"action", "AbortJob"}}));
  EXPECT_EQ(policies[0], (nlohmann::json{{"exitCode", 64}, {"action", "TerminateJob"}}));
}

TEST(ExitCodesCommandTest, PlainTextIsTheHelpSection) {
  testing::ProcessResult table = Hetrun({"exit-codes"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  testing::ProcessResult help = Hetrun({"--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find(table.out), std::string::npos) << help.out;
}

TEST(ExitCodesCommandTest, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(Hetrun({"exit-codes", "extra"}).exit_code, 64);
  EXPECT_EQ(Hetrun({"exit-codes", "--markdown", "--json"}).exit_code, 64);
  EXPECT_EQ(Hetrun({"exit-codes", "--bogus"}).exit_code, 64);
  testing::ProcessResult help = Hetrun({"exit-codes", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--markdown"), std::string::npos);
}

}  // namespace
}  // namespace hetrun

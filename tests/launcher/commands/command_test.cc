#include "commands/command.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "hetrun/base/exit_code.h"

namespace hetrun::launcher {
namespace {

Result<int> Hetrun(const std::vector<std::string>& args, std::string* out) {
  Environment env;
  std::ostringstream o, e;
  Result<int> r = Dispatch(args, env, o, e);
  *out = o.str();
  return r;
}

TEST(CommandTest, HelpListsEverySubcommandAndTheExitCodes) {
  std::string out;
  EXPECT_EQ(*Hetrun({"--help"}, &out), 0);
  for (const Subcommand& sub : Subcommands()) {
    EXPECT_NE(out.find("  " + std::string(sub.name)), std::string::npos) << sub.name;
  }
  EXPECT_NE(out.find(ExitCodeText()), std::string::npos) << "the exit-code table";
  EXPECT_NE(out.find("78         TerminateJob  configuration error"), std::string::npos);
  EXPECT_NE(out.find("HETRUN_FAKE_GPUS"), std::string::npos);
}

TEST(CommandTest, NoArgumentsPrintsHelpAndIsAUsageError) {
  std::string out;
  EXPECT_EQ(*Hetrun({}, &out), 64);
  EXPECT_NE(out.find("Subcommands:"), std::string::npos);
}

TEST(CommandTest, UnknownSubcommandSuggestsTheNearestName) {
  std::string out;
  Result<int> r = Hetrun({"versoin"}, &out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUsage);
  EXPECT_NE(r.status().message().find("did you mean 'version'"), std::string::npos);
}

TEST(CommandTest, SubcommandNamesAreUnique) {
  std::set<std::string_view> names;
  for (const Subcommand& sub : Subcommands()) EXPECT_TRUE(names.insert(sub.name).second);
}

TEST(CommandTest, VarsMarkdownIsTheReadmeTable) {
  std::string out;
  EXPECT_EQ(*Hetrun({"vars", "--markdown"}, &out), 0);
  EXPECT_EQ(out, EnvVarTableMarkdown());
  Result<int> extra = Hetrun({"vars", "stray"}, &out);
  EXPECT_EQ(extra.status().code(), StatusCode::kUsage);
}

}  // namespace
}  // namespace hetrun::launcher

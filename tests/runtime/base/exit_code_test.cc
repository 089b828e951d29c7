#include "hetrun/base/exit_code.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace hetrun {
namespace {

std::string DocsExitCodeTable() {
  std::ifstream in(std::string(HETRUN_SOURCE_DIR) + "/docs/reference/exit-codes.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string readme = text.str();
  size_t section = readme.find("# Exit codes\n");
  if (section == std::string::npos) return "no '# Exit codes' in docs/reference/exit-codes.md";
  size_t begin = readme.find("\n| code |", section);
  if (begin == std::string::npos) return "no table in docs/reference/exit-codes.md";
  size_t end = readme.find("\n\n", begin + 1);
  return readme.substr(begin + 1, end - begin);
}

TEST(ExitCodeTest, MapsEveryStatusCodeToTheContract) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(UsageError("x")), 64);
  EXPECT_EQ(ExitCodeFor(InvalidArgumentError("x")), 78);
  EXPECT_EQ(ExitCodeFor(NotFoundError("x")), 78);
  EXPECT_EQ(ExitCodeFor(FailedPreconditionError("x")), 78);
  EXPECT_EQ(ExitCodeFor(UnavailableError("x")), 75);
  EXPECT_EQ(ExitCodeFor(DeadlineExceededError("x")), 75);
  EXPECT_EQ(ExitCodeFor(ArchMismatchError("x")), 80);
  EXPECT_EQ(ExitCodeFor(ResourceExhaustedError("x")), 81);
  EXPECT_EQ(ExitCodeFor(InternalError("x")), 70);
}

TEST(ExitCodeTest, WaitStatusPassesCodesThroughAndAddsSignalsTo128) {
  for (int code = 0; code < 256; ++code) {
    EXPECT_EQ(ExitCodeForWaitStatus(code << 8), code);  // W_EXITCODE(code, 0)
  }
  EXPECT_EQ(ExitCodeForWaitStatus(SIGKILL), 137);
  EXPECT_EQ(ExitCodeForWaitStatus(SIGTERM), 143);
}

TEST(ExitCodeTableTest, ConstantsAreTheTablesCodes) {
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitUsage, 64);
  EXPECT_EQ(kExitInternal, 70);
  EXPECT_EQ(kExitTransient, 75);
  EXPECT_EQ(kExitConfig, 78);
  EXPECT_EQ(kExitArchMismatch, 80);
  EXPECT_EQ(kExitMemory, 81);
  EXPECT_EQ(kExitNotExecutable, 126);
  EXPECT_EQ(kExitNotFound, 127);
  EXPECT_EQ(kExitTerminated, 143);
  for (const ExitCodeRow& row : ExitCodeTable()) {
    if (row.kind != ExitCodeRow::Kind::kCode) continue;
    EXPECT_EQ(row.cell, std::to_string(row.code)) << row.constant;
    EXPECT_EQ(row.constant.substr(0, 5), "kExit") << row.cell;
  }
}

TEST(ExitCodeTableTest, RowsAreUniqueAndComplete) {
  std::set<std::string_view> cells;
  for (const ExitCodeRow& row : ExitCodeTable()) {
    EXPECT_TRUE(cells.insert(row.cell).second) << "listed twice: " << row.cell;
    EXPECT_FALSE(row.meaning.empty()) << row.cell;
    EXPECT_FALSE(row.action.empty()) << row.cell;
    EXPECT_EQ(row.meaning.find('|'), std::string_view::npos) << "breaks the Markdown table";
    EXPECT_GE(row.code, row.kind == ExitCodeRow::Kind::kCode ? 0 : -1);
    EXPECT_LE(row.code, 255) << row.cell;
  }
  for (std::string_view needed : {"1-63", "128+N", "PodEvicted", "PodFailed"}) {
    EXPECT_TRUE(cells.count(needed)) << needed;
  }
}

TEST(ExitCodeTableTest, PoliciesListEveryActionableCodeThenTheEventsWithTheCatchAllLast) {
  std::vector<VolcanoPolicy> policies = VolcanoPolicies();
  ASSERT_GE(policies.size(), 3u);
  EXPECT_EQ(policies.back().event, "PodFailed");
  EXPECT_EQ(policies.back().action, "AbortJob");
  bool seen_event = false;
  std::set<int> codes;
  for (const VolcanoPolicy& policy : policies) {
    if (policy.exit_code < 0) {
      seen_event = true;
      EXPECT_FALSE(policy.event.empty());
    } else {
      EXPECT_FALSE(seen_event) << "exit " << policy.exit_code << " after an event never matches";
      codes.insert(policy.exit_code);
    }
  }
  EXPECT_EQ(codes, (std::set<int>{64, 70, 75, 78, 80, 81, 83, 84, 126, 127, 143}));
  for (const ExitCodeRow& row : ExitCodeTable()) {
    if (row.kind != ExitCodeRow::Kind::kCode) continue;
    EXPECT_EQ(codes.count(row.code) == 1, row.IsPolicy()) << row.cell;
  }
}

TEST(ExitCodeTableTest, TheExitCodesPageTableIsTheMarkdown) {
  EXPECT_EQ(DocsExitCodeTable(), ExitCodeMarkdown())
      << "regenerate docs/reference/exit-codes.md with `make docs-update`";
}

TEST(ExitCodeTableTest, TextHasOneLinePerRow) {
  std::string text = ExitCodeText();
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, ExitCodeTable().size());
  EXPECT_NE(text.find("  126        TerminateJob  worker command not executable\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace hetrun

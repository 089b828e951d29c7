// A job restarted whole resumes from its moved split (issue 19; docs/how-to/restarts.md):
// examples/trainer under the real `hetrun run --plan P --layout-state F` moves layers
// (--force-split), global rank 0 writes F; a second, separate `hetrun run` (a new run folder, as
// after a Volcano job restart) with the same plan and F starts from the moved split.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "free_port.h"
#include "hetrun/pipeline/job_layout.h"
#include "run_process.h"
#include "summary_file.h"

namespace hetrun {
namespace {

using testing::FreePort;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::ReadSummary;
using testing::RunProcess;
using testing::TempDir;

ProcessOptions Options(const TempDir& dir) {
  return testing::IsolatedIn(dir, std::chrono::seconds(280),
                             {{"HETRUN_TERMINATION_LOG", "/dev/null"}});
}

// `hetrun run --plan PLAN --layout-state STATE -- trainer FLAGS...` over 3 workers.
ProcessResult RunTrainer(const TempDir& dir, const std::string& plan, const std::string& state,
                         const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {HETRUN_BINARY,
                                   "run",
                                   "--nproc-per-node",
                                   "3",
                                   "--master-port",
                                   std::to_string(FreePort()),
                                   "--plan",
                                   plan,
                                   "--layout-state",
                                   state,
                                   "--",
                                   HETRUN_TRAINER,
                                   "--layers",
                                   "4",
                                   "--seq",
                                   "8",
                                   "--dim",
                                   "16",
                                   "--batch",
                                   "8",
                                   "--steps",
                                   "2",
                                   "--no-rebalance"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunProcess(argv, Options(dir));
}

TEST(LayoutStateRestartTest, ASecondRunWithTheStateStartsFromTheMovedSplit) {
  TempDir dir;
  // 6 layers (embedding, 4 blocks, head): stage 0 of 2 replicas holds 1, stage 1 holds 5.
  const std::string plan =
      dir.WriteFile("plan.json", R"({"layers": 6, "micro_batches": 2, "stages": [
      {"first_layer": 0, "layers": 1, "replicas": 2}, {"first_layer": 1, "layers": 5}]})");
  const std::string state = dir.path() + "/state.json";
  ProcessResult first =
      RunTrainer(dir, plan, state, {"--force-split", "0:3,3", "--summary", dir.path() + "/1.sum"});
  ASSERT_FALSE(first.timed_out) << first.err;
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(ReadSummary(dir.path() + "/1.sum")["split_final"], "3,3");
  Result<pipeline::JobLayout> saved = pipeline::LoadJobLayout(state);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->revision, 1);
  ASSERT_EQ(saved->stages.size(), 2u);
  EXPECT_EQ(saved->stages[0].layers, 3);

  ProcessResult second = RunTrainer(dir, plan, state, {"--summary", dir.path() + "/2.sum"});
  ASSERT_FALSE(second.timed_out) << second.err;
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_NE(second.err.find("resuming from the layout state " + state +
                            ", revision 1, split 3,3 (the plan's was 1,5)"),
            std::string::npos)
      << second.err;
  std::map<std::string, std::string> summary = ReadSummary(dir.path() + "/2.sum");
  EXPECT_EQ(summary["split_first"], "3,3");
  EXPECT_EQ(summary["split_final"], "3,3");
  EXPECT_EQ(summary["layout_revision"], "1");
}

}  // namespace
}  // namespace hetrun

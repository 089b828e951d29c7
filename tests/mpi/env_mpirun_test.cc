// `hetrun env` under a real `mpirun -np 4` (Open MPI): every process is one worker and reports
// its own rank from OMPI_COMM_WORLD_*.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;

TEST(EnvMpirunTest, EveryProcessReportsItsOwnRank) {
  std::map<std::string, std::string> env = {
      {"PATH", std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"},
      {"HOME", "/tmp"},
      {"HETRUN_TERMINATION_LOG", ""}};
  ProcessOptions options;
  options.env = env;
  options.timeout = std::chrono::seconds(240);
  std::vector<std::string> argv = {"mpirun", "-np", "4", "--oversubscribe", "--tag-output"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), {HETRUN_BINARY, "env"});
  ProcessResult r = RunProcess(argv, options);
  if (r.exit_code == 127 || r.exit_code == -1) {
    GTEST_SKIP() << "mpirun (Open MPI) is not installed: apt-get install openmpi-bin";
  }
  ASSERT_FALSE(r.timed_out) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // --tag-output prefixes each line with "[JOB,RANK]<stdout>:".
  std::regex line_re(R"(^\[\d+,(\d+)\]<stdout>:\s*(\w+)=([^ ]*))");
  std::map<int, std::map<std::string, std::string>> by_rank;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, line_re)) by_rank[std::stoi(m[1])][m[2]] = m[3];
  }
  ASSERT_EQ(by_rank.size(), 4u) << r.out;
  std::set<std::string> local_ranks;
  for (const auto& [mpi_rank, fields] : by_rank) {
    EXPECT_EQ(fields.at("source"), "open-mpi") << r.out;
    EXPECT_EQ(fields.at("ranks"), std::to_string(mpi_rank)) << r.out;
    EXPECT_EQ(fields.at("world_size"), "4") << r.out;
    EXPECT_EQ(fields.at("nnodes"), "1") << r.out;
    EXPECT_EQ(fields.at("node_rank"), "0") << r.out;
    local_ranks.insert(fields.at("local_ranks"));
  }
  EXPECT_EQ(local_ranks, (std::set<std::string>{"0", "1", "2", "3"}));
}

}  // namespace
}  // namespace hetrun

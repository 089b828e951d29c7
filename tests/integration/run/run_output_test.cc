// Worker environment (§4.2), --prefix-ranks prefixes and --log-dir files of `hetrun run`.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_harness.h"
#include "supervise/cpu_binding.h"

namespace hetrun {
namespace {

using testing::HetrunEnv;
using testing::HetrunProcess;
using testing::RunArgs;
using testing::TempDir;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(RunOutputTest, WorkersGetTheTorchrunEnvironment) {
  TempDir dir;
  const std::string port = std::to_string(testing::FreePort());
  HetrunProcess run(
      RunArgs(2,
              {"--prefix-ranks", "--master-port", port, "--fake-gpus",
               "A100-SXM4-80GB:8.0:81049,H100-SXM5-80GB:9.0:81090", "--run-id", "job7"},
              {"env", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
               "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
               "OMP_NUM_THREADS", "HETRUN_GPU_FAMILY", "HETRUN_HEARTBEAT"}),
      HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  std::string out = run.out();
  const std::string store = "[rank 0] TORCHELASTIC_USE_AGENT_STORE=" + testing::OneNodeAgentStore();
  const std::string port_line = "[rank 1] MASTER_PORT=" + port;
  for (const std::string& line : std::vector<std::string>{
           "[rank 0] RANK=0", "[rank 1] RANK=1", "[rank 1] WORLD_SIZE=2", "[rank 1] LOCAL_RANK=1",
           "[rank 0] LOCAL_WORLD_SIZE=2", "[rank 0] GROUP_RANK=0", "[rank 0] GROUP_WORLD_SIZE=1",
           "[rank 0] MASTER_ADDR=127.0.0.1", port_line, "[rank 0] TORCHELASTIC_RESTART_COUNT=0",
           "[rank 0] TORCHELASTIC_MAX_RESTARTS=0", "[rank 0] TORCHELASTIC_RUN_ID=job7", store,
           "[rank 1] OMP_NUM_THREADS=1", "[rank 0] HETRUN_GPU_FAMILY=ampere",
           "[rank 1] HETRUN_GPU_FAMILY=hopper", "[rank 0] HETRUN_HEARTBEAT unset"}) {
    EXPECT_TRUE(Contains(out, line)) << line << "\n" << out;
  }
}

TEST(RunOutputTest, TeePrefixesWholeLinesOfEveryRank) {
  TempDir dir;
  std::string long_line(10000, 'x');
  HetrunProcess run(RunArgs(2, {"--prefix-ranks"}, {"out", long_line, "err", "on stderr"}),
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  for (int rank : {0, 1}) {
    std::string prefix = "[rank " + std::to_string(rank) + "] ";
    EXPECT_TRUE(Contains(run.out(), prefix + long_line + "\n")) << "rank " << rank;
    EXPECT_TRUE(Contains(run.err(), prefix + "on stderr\n")) << run.err();
  }
}

// Issue 28 item 4: a progress bar ('\r' updates) and a prompt without a newline reached the
// console only with the worker's next newline (tqdm: all at once at the end). The worker waits
// for the test to see each one before it goes on; it never writes a newline until the end.
TEST(RunOutputTest, ProgressBarsAndQuietPartialLinesReachTheConsoleWhileTheWorkerRuns) {
  TempDir dir;
  const std::string seen = dir.path() + "/seen";
  const std::string script = "printf ' 10%%|#\\r'; i=0; while [ ! -e " + seen +
                             "1 ] && [ $i -lt 600 ]; do sleep 0.1; "
                             "i=$((i+1)); done; printf 'Continue? '; i=0; while [ ! -e " +
                             seen +
                             "2 ] && [ $i -lt 600 ]; "
                             "do sleep 0.1; i=$((i+1)); done; echo yes";
  HetrunProcess bar(
      {"run", "--nproc-per-node", "1", "--prefix-ranks", "--", "/bin/sh", "-c", script},
      HetrunEnv(dir.path()), dir.path(), "bar");
  EXPECT_TRUE(testing::WaitUntil([&] { return Contains(bar.out(), "[rank 0]  10%|#\r"); },
                                 std::chrono::seconds(50)))
      << "the '\\r' segment did not arrive while the worker ran: " << bar.out();
  std::filesystem::create_directories(seen + "1");
  EXPECT_TRUE(testing::WaitUntil([&] { return Contains(bar.out(), "[rank 0] Continue? "); },
                                 std::chrono::seconds(50)))
      << "the quiet partial line did not arrive: " << bar.out();
  std::filesystem::create_directories(seen + "2");
  ASSERT_EQ(bar.Wait(), 0) << bar.err();
  EXPECT_TRUE(Contains(bar.out(), "[rank 0] Continue? yes\n")) << bar.out();
}

TEST(RunOutputTest, CpuBindSpreadDealsHetrunsCpusToTheLocalRanks) {
  Result<std::vector<int>> cpus = launcher::AllowedCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status().ToString();
  std::vector<std::vector<int>> expected = launcher::SpreadCpus(*cpus, 3);
  TempDir dir;
  HetrunProcess run(
      {"run", "--nproc-per-node", "3", "--prefix-ranks", "--cpu-bind", "spread", "--", "/bin/sh",
       "-c", "echo cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"},
      HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  for (int rank = 0; rank < 3; ++rank) {
    std::string line = "[rank " + std::to_string(rank) +
                       "] cpus=" + launcher::CpuListText(expected[static_cast<size_t>(rank)]) +
                       "\n";
    EXPECT_TRUE(Contains(run.out(), line)) << line << run.out();
  }
  EXPECT_TRUE(Contains(run.err(), "cpu binding (spread over CPUs " + launcher::CpuListText(*cpus)))
      << run.err();
}

// make demo's pipeline part relies on it: under --plan each stage's worker is bound too.
TEST(RunOutputTest, CpuBindSpreadBindsEveryStageOfAPlan) {
  Result<std::vector<int>> cpus = launcher::AllowedCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status().ToString();
  std::vector<std::vector<int>> expected = launcher::SpreadCpus(*cpus, 2);
  TempDir dir;
  const std::string plan = dir.WriteFile("plan.json", R"({
    "layers": 3, "micro_batches": 2, "layer_names": ["embedding", "block.0", "head"],
    "stages": [{"family": "ampere", "first_layer": 0, "layers": 1},
               {"family": "hopper", "first_layer": 1, "layers": 2}]})");
  HetrunProcess run({"run", "--nproc-per-node", "2", "--prefix-ranks", "--cpu-bind", "spread",
                     "--plan", plan, "--", "/bin/sh", "-c",
                     "echo stage=$HETRUN_STAGE cpus=$(grep Cpus_allowed_list /proc/self/status "
                     "| cut -f2)"},
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  for (int rank = 0; rank < 2; ++rank) {
    std::string line = "[rank " + std::to_string(rank) + "] stage=" + std::to_string(rank) +
                       " cpus=" + launcher::CpuListText(expected[static_cast<size_t>(rank)]) + "\n";
    EXPECT_TRUE(Contains(run.out(), line)) << line << run.out();
  }
}

TEST(RunOutputTest, WithoutCpuBindWorkersKeepHetrunsCpus) {
  Result<std::vector<int>> cpus = launcher::AllowedCpus();
  ASSERT_TRUE(cpus.ok());
  TempDir dir;
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["HETRUN_CPU_BIND"] = "none";
  HetrunProcess run({"run", "--nproc-per-node", "2", "--", "/bin/sh", "-c",
                     "echo cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"},
                    env, dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_EQ(run.out(), "cpus=" + launcher::CpuListText(*cpus) +
                           "\ncpus=" + launcher::CpuListText(*cpus) + "\n");
}

TEST(RunOutputTest, BadCpuBindIsAUsageErrorAndBadEnvironmentAConfigError) {
  TempDir dir;
  HetrunProcess flag(RunArgs(1, {"--cpu-bind", "cores"}, {"exit", "0"}), HetrunEnv(dir.path()),
                     dir.path());
  EXPECT_EQ(flag.Wait(), 64);
  EXPECT_TRUE(Contains(flag.err(), "--cpu-bind 'cores': cpu binding 'cores'")) << flag.err();
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["HETRUN_CPU_BIND"] = "all";
  HetrunProcess from_env(RunArgs(1, {}, {"exit", "0"}), env, dir.path());
  EXPECT_EQ(from_env.Wait(), 78);
  EXPECT_TRUE(Contains(from_env.err(), "HETRUN_CPU_BIND='all' (environment): cpu binding 'all'"))
      << from_env.err();
}

TEST(RunOutputTest, APlanStageListIsNarrowedToThePodsEntry) {
  TempDir dir;
  std::map<std::string, std::string> env = HetrunEnv(dir.path());
  env["VC_TASK_INDEX"] = "2";
  env["HETRUN_STAGE"] = "1,2,3,4";
  env["HETRUN_STAGE_LAYERS"] = "4:14,18:14,32:14,46:14";
  HetrunProcess run({"run", "--nproc-per-node", "2", "--prefix-ranks", "--", "/bin/sh", "-c",
                     "echo stage=$HETRUN_STAGE layers=$HETRUN_STAGE_LAYERS"},
                    env, dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  EXPECT_TRUE(Contains(run.out(), "[rank 0] stage=3 layers=32:14\n")) << run.out();
  EXPECT_TRUE(Contains(run.out(), "[rank 1] stage=3 layers=32:14\n")) << run.out();
  EXPECT_TRUE(Contains(run.err(), "pipeline stage 3 (entry 2 of HETRUN_STAGE=1,2,3,4)"))
      << run.err();

  env.erase("VC_TASK_INDEX");
  HetrunProcess unknown({"run", "--nproc-per-node", "1", "--", "/bin/true"}, env, dir.path());
  EXPECT_EQ(unknown.Wait(), 78);
  EXPECT_TRUE(Contains(unknown.err(), "set VC_TASK_INDEX")) << unknown.err();
}

TEST(RunOutputTest, LogDirKeepsOneFilePerRank) {
  TempDir dir;
  std::string logs = dir.path() + "/logs";
  HetrunProcess run(RunArgs(2, {"--log-dir", logs}, {"out", "to stdout", "err", "to stderr"}),
                    HetrunEnv(dir.path()), dir.path());
  ASSERT_EQ(run.Wait(), 0) << run.err();
  for (int rank : {0, 1}) {
    std::string log = testing::ReadFile(logs + "/rank_" + std::to_string(rank) + ".log");
    EXPECT_TRUE(Contains(log, "to stdout\n")) << log;
    EXPECT_TRUE(Contains(log, "to stderr\n")) << log;
  }
  EXPECT_TRUE(Contains(run.out(), "to stdout"))
      << "without --prefix-ranks output still reaches the console";
}

TEST(RunOutputTest, JsonLogFormatWrapsWorkerLinesAndTextTimestampsOnlyHetrunsOwn) {
  TempDir dir;
  std::vector<std::string> json_args = {"--log-format", "json"};
  for (const std::string& arg : RunArgs(2, {}, {"out", "to stdout", "err", "to stderr"})) {
    json_args.push_back(arg);
  }
  HetrunProcess json_run(json_args, HetrunEnv(dir.path()), dir.path(), "json");
  ASSERT_EQ(json_run.Wait(), 0) << json_run.err();
  int wrapped = 0;
  for (const std::string& path : {dir.path() + "/json.out", dir.path() + "/json.err"}) {
    for (const std::string& line : testing::ReadLines(path)) {
      nlohmann::json object = nlohmann::json::parse(line);  // every line is one object
      if (!object.contains("stream")) continue;
      ++wrapped;
      bool out = object["stream"] == "stdout";
      EXPECT_EQ(object["msg"], out ? "to stdout" : "to stderr") << line;
      EXPECT_EQ(path.ends_with(".out"), out) << "each stream stays on its own fd: " << line;
      EXPECT_TRUE(object["rank"] == 0 || object["rank"] == 1) << line;
    }
  }
  EXPECT_EQ(wrapped, 4) << "2 workers x 2 lines";
  HetrunProcess text_run(RunArgs(1, {}, {"out", "plain line"}), HetrunEnv(dir.path()), dir.path(),
                         "text");
  ASSERT_EQ(text_run.Wait(), 0) << text_run.err();
  EXPECT_EQ(text_run.out(), "plain line\n") << "worker lines pass through untouched";
  for (const std::string& line : testing::ReadLines(dir.path() + "/text.err")) {
    ASSERT_GE(line.size(), 25u) << line;
    EXPECT_EQ(line[10], 'T') << line;
    EXPECT_EQ(line.substr(23, 10), "Z [hetrun ") << line;
  }
}

}  // namespace
}  // namespace hetrun

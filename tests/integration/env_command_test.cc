// `hetrun env` as a real process under a whole, chosen environment (like `env -i`), one case per
// launcher convention: what a user sees, and the exit code of bad input.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_process.h"

namespace hetrun {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;
using Vars = std::map<std::string, std::string>;

ProcessResult RunEnv(Vars env, std::vector<std::string> args = {}) {
  // No /etc/volcano lookups from the test machine: an empty host dir unless the case sets one.
  env.emplace("HETRUN_VOLCANO_HOST_DIR", HETRUN_SOURCE_DIR "/tests/integration");
  env.emplace("HETRUN_TERMINATION_LOG", "");
  std::vector<std::string> argv = {HETRUN_BINARY, "env"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.env = env;
  return RunProcess(argv, options);
}

nlohmann::json Json(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(EnvCommandTest, NothingIsASingleNode) {
  nlohmann::json j = Json(RunEnv({}, {"--json"}));
  EXPECT_EQ(j["source"], "single-node");
  EXPECT_EQ(j["nnodes"], 1);
  EXPECT_EQ(j["master_addr"], "127.0.0.1");
  EXPECT_EQ(j["world_size"], 1);
}

TEST(EnvCommandTest, VolcanoPytorchPluginCountsPodsInText) {
  ProcessResult r = RunEnv({{"WORLD_SIZE", "3"},
                            {"RANK", "2"},
                            {"MASTER_ADDR", "tj-master-0.tj"},
                            {"MASTER_PORT", "23456"}},
                           {"--nproc-per-node", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nnodes=3 (WORLD_SIZE, Volcano pytorch plugin: counts pods)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ranks=4,5\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("world_size=6"), std::string::npos) << r.out;
}

TEST(EnvCommandTest, VolcanoSvcPipelineWithFakeGpusAuto) {
  Vars env = {{"VC_HEAVY_STAGE_WORKERS_NUM", "4"},
              {"VC_HEAVY_STAGE_WORKERS_HOSTS",
               "pipe-heavy-stage-workers-0.pipe,pipe-heavy-stage-workers-1.pipe,"
               "pipe-heavy-stage-workers-2.pipe,pipe-heavy-stage-workers-3.pipe"},
              {"VC_LIGHT_STAGE_WORKERS_NUM", "2"},
              {"VC_LIGHT_STAGE_WORKERS_HOSTS",
               "pipe-light-stage-workers-0.pipe,pipe-light-stage-workers-1.pipe"},
              {"VC_TASK_INDEX", "1"},
              {"HETRUN_TASK", "light-stage-workers"},
              {"HETRUN_FAKE_GPUS", "A100-SXM4-80GB:8.0:81049,A100-SXM4-80GB:8.0:81049"}};
  nlohmann::json j = Json(RunEnv(env, {"--json", "--nproc-per-node", "auto"}));
  EXPECT_EQ(j["source"], "volcano-svc");
  EXPECT_EQ(j["nnodes"], 6);
  EXPECT_EQ(j["node_rank"], 5);
  EXPECT_EQ(j["nproc_per_node"], 2);
  EXPECT_EQ(j["ranks"], nlohmann::json::array({10, 11}));
  EXPECT_EQ(j["local_ranks"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(j["master_addr"], "pipe-heavy-stage-workers-0.pipe");
  EXPECT_EQ(j["master_port"], 23456);
  EXPECT_EQ(j["task"], "light-stage-workers");
  EXPECT_EQ(j["task_index"], 1);
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["name"], "heavy-stage-workers");
  EXPECT_EQ(j["tasks"][0]["replicas"], 4);
  EXPECT_EQ(j["tasks"][1]["hosts"].size(), 2u);
}

// A pod of `hetrun plan --emit jobset`: the downward API's JobSet labels and the plan's variables.
Vars JobSetPod() {
  return {{"HETRUN_TASK", "heavy-stage-workers"},
          {"HETRUN_TASK_ORDER", "light-stage-workers,heavy-stage-workers"},
          {"HETRUN_JOBSET_REPLICAS", "2,4"},
          {"HETRUN_JOBSET_NAME", "pipe"},
          {"HETRUN_JOBSET_JOB_INDEX", "3"},
          {"HETRUN_JOBSET_GLOBAL_INDEX", "5"},
          {"HETRUN_JOBSET_RESTART_ATTEMPT", "1"},
          {"JOB_COMPLETION_INDEX", "0"}};
}

TEST(EnvCommandTest, JobSetPodShowsJobSetAsTheSourceAndItsIncarnation) {
  ProcessResult r = RunEnv(JobSetPod(), {"--nproc-per-node", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("source=jobset\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node_rank=5 (HETRUN_JOBSET_GLOBAL_INDEX, JobSet label job-global-index)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("master_addr=pipe-light-stage-workers-0-0.pipe ("), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("incarnation=1 (HETRUN_JOBSET_RESTART_ATTEMPT"), std::string::npos) << r.out;
  nlohmann::json j = Json(RunEnv(JobSetPod(), {"--json", "--nproc-per-node", "2"}));
  EXPECT_EQ(j["source"], "jobset");
  EXPECT_EQ(j["nnodes"], 6);
  EXPECT_EQ(j["ranks"], nlohmann::json::array({10, 11}));
  EXPECT_EQ(j["task_index"], 3);
  EXPECT_EQ(j["incarnation"], 1);
}

TEST(EnvCommandTest, JobSetPodWithADisagreeingGlobalIndexExits78) {
  Vars env = JobSetPod();
  env["HETRUN_JOBSET_GLOBAL_INDEX"] = "4";
  ProcessResult r = RunEnv(env, {"--nproc-per-node", "2"});
  EXPECT_EQ(r.exit_code, 78) << r.out;
  EXPECT_NE(r.err.find("HETRUN_JOBSET_GLOBAL_INDEX='4'"), std::string::npos) << r.err;
}

TEST(EnvCommandTest, VolcanoHostFilesWhenNoEnvVars) {
  testing::TempDir dir;
  dir.WriteFile("worker.host", "j-worker-0.j\nj-worker-1.j");
  dir.WriteFile("master.host", "j-master-0.j");
  nlohmann::json j = Json(RunEnv(
      {{"HETRUN_VOLCANO_HOST_DIR", dir.path()}, {"VC_TASK_INDEX", "1"}, {"HETRUN_TASK", "worker"}},
      {"--json"}));
  EXPECT_EQ(j["nnodes"], 3);
  EXPECT_EQ(j["node_rank"], 2);
  EXPECT_EQ(j["master_addr"], "j-master-0.j");
}

TEST(EnvCommandTest, KubeflowPyTorchJob) {
  nlohmann::json j = Json(RunEnv({{"PET_NNODES", "2"},
                                  {"PET_NODE_RANK", "1"},
                                  {"PET_NPROC_PER_NODE", "4"},
                                  {"MASTER_ADDR", "kj-master-0"},
                                  {"MASTER_PORT", "23456"},
                                  {"WORLD_SIZE", "8"},
                                  {"RANK", "1"}},
                                 {"--json"}));
  EXPECT_EQ(j["source"], "kubeflow-pytorchjob");
  EXPECT_EQ(j["world_size"], 8);
  EXPECT_EQ(j["ranks"], nlohmann::json::array({4, 5, 6, 7}));
}

TEST(EnvCommandTest, OpenMpiProcessIsOneWorker) {
  nlohmann::json j = Json(RunEnv({{"OMPI_COMM_WORLD_RANK", "2"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
                                 {"--json"}));
  EXPECT_EQ(j["source"], "open-mpi");
  EXPECT_EQ(j["per_process"], true);
  EXPECT_EQ(j["ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(j["world_size"], 4);
}

TEST(EnvCommandTest, MpichProcessIsOneWorker) {
  nlohmann::json j = Json(RunEnv(
      {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}},
      {"--json"}));
  EXPECT_EQ(j["source"], "mpich");
  EXPECT_EQ(j["ranks"], nlohmann::json::array({1}));
}

TEST(EnvCommandTest, SlurmStepShowsOverriddenValuesUnderMpirun) {
  ProcessResult r = RunEnv({{"SLURM_PROCID", "0"},
                            {"SLURM_NTASKS", "1"},
                            {"SLURM_LOCALID", "0"},
                            {"SLURM_NODEID", "0"},
                            {"SLURM_NNODES", "1"},
                            {"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("override: rank=3 (OMPI_COMM_WORLD_RANK, Open MPI) overrides 0 "
                       "(SLURM_PROCID, Slurm)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("overrides 0 (SLURM_PROCID, Slurm)"), std::string::npos) << r.err;
}

TEST(EnvCommandTest, FlagsOverrideHetrunVariables) {
  nlohmann::json j =
      Json(RunEnv({{"HETRUN_NNODES", "2"}, {"HETRUN_NODE_RANK", "1"}, {"HETRUN_MASTER_ADDR", "h0"}},
                  {"--json", "--node-rank", "0", "--nproc-per-node", "1"}));
  EXPECT_EQ(j["node_rank"], 0);
  ASSERT_EQ(j["overrides"].size(), 1u);
  EXPECT_EQ(j["overrides"][0]["overridden"], "1 (HETRUN_NODE_RANK)");
}

TEST(EnvCommandTest, BadInputExits78WithOneLineNamingTheVariable) {
  struct Bad {
    Vars env;
    std::string message;
  };
  std::vector<Bad> cases = {
      {{{"WORLD_SIZE", "2"}, {"RANK", "5"}}, "RANK='5'"},
      {{{"WORLD_SIZE", "abc"}, {"RANK", "0"}}, "WORLD_SIZE='abc'"},
      {{{"VC_A_NUM", "2"}, {"VC_A_HOSTS", "j-a-0"}}, "VC_A_HOSTS='j-a-0'"},
      {{{"VC_A_NUM", "1"}, {"VC_TASK_INDEX", "0"}}, "HOSTNAME="},
      {{{"VC_A_NUM", "1"}, {"HETRUN_TASK", "a"}, {"VC_TASK_INDEX", "1"}}, "VC_TASK_INDEX='1'"},
      {{{"VC_A_NUM", "1"}, {"HETRUN_TASK", "a"}, {"HETRUN_TASK_ORDER", "b"}},
       "HETRUN_TASK_ORDER='b'"},
      {{{"MASTER_PORT", "70000"}}, "MASTER_PORT='70000'"},
      {{{"MASTER_ADDR", ""}}, "MASTER_ADDR=''"},
      {{{"HETRUN_NNODES", "-1"}}, "HETRUN_NNODES='-1'"},
  };
  for (const Bad& bad : cases) {
    ProcessResult r = RunEnv(bad.env);
    EXPECT_EQ(r.exit_code, 78) << bad.message << "\n" << r.err;
    EXPECT_NE(r.err.find(bad.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(EnvCommandTest, BadFlagValueIsAUsageError) {
  ProcessResult r = RunEnv({}, {"--master-port", "0"});
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("--master-port='0'"), std::string::npos) << r.err;
}

TEST(EnvCommandTest, UnreadableHostDirIsNamed) {
  ProcessResult r = RunEnv({{"HETRUN_VOLCANO_HOST_DIR", "/nonexistent/volcano"}});
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/volcano"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrun

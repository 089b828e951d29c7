// examples/launchers/: the other ways users start hetrun, exercised as far as this machine
// allows: the mpirun script for real (Open MPI), the Slurm script's srun line under a 2-node
// allocation's variables (--dry-run), the Kubeflow PyTorchJob's command line under the
// variables the operator gives its Worker pod (--dry-run).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "free_port.h"
#include "run_process.h"
#include "yaml_json.h"

namespace hetrun {
namespace {

using testing::FreePort;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

const std::string kExamples = std::string(HETRUN_SOURCE_DIR) + "/examples/launchers/";

std::map<std::string, std::string> BaseEnv() {
  std::string bin = std::string(HETRUN_BINARY);
  bin = bin.substr(0, bin.rfind('/'));
  const char* path = std::getenv("PATH");
  // HETRUN_PYTHON as in the pods, whose installed hetrun starts python3 from PATH (the launcher
  // of this build tree would start the build's Python: preflight/default_python.h).
  return {{"PATH", bin + ":" + (path ? path : "/usr/bin:/bin")},
          {"HOME", "/tmp"},
          {"HETRUN_TERMINATION_LOG", ""},
          {"HETRUN_PYTHON", "python3"}};
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LauncherExamplesTest, MpirunScriptStartsOneWorkerPerProcessForReal) {
  TempDir dir;
  std::string worker = dir.WriteFile(
      "worker.py",
      "import os\nprint('WORKER', os.environ['RANK'], os.environ['WORLD_SIZE'], "
      "os.environ['LOCAL_RANK'], os.environ['TORCHELASTIC_USE_AGENT_STORE'], flush=True)\n");
  ProcessOptions options;
  options.env = BaseEnv();
  (*options.env)["NPROC"] = "2";
  (*options.env)["MASTER_PORT"] = std::to_string(FreePort());
  (*options.env)["MPIRUN_FLAGS"] =
      geteuid() == 0 ? "--oversubscribe --allow-run-as-root" : "--oversubscribe";
  options.timeout = std::chrono::seconds(240);
  ProcessResult r = RunProcess({kExamples + "mpirun.sh", worker}, options);
  if (r.exit_code == 127 && Contains(r.err, "mpirun")) {
    GTEST_SKIP() << "mpirun (Open MPI) is not installed: apt-get install openmpi-bin";
  }
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "WORKER 0 2 0 True")) << r.out;
  EXPECT_TRUE(Contains(r.out, "WORKER 1 2 1 True")) << r.out;
}

TEST(LauncherExamplesTest, SlurmScriptIsValidBashAndItsSrunLineGivesNodeOnesRanks) {
  ProcessResult syntax = RunProcess({"bash", "-n", kExamples + "sbatch.sh"});
  ASSERT_EQ(syntax.exit_code, 0) << syntax.err;
  TempDir dir;
  // Stands in for srun on one node: drops srun's own flags, runs hetrun with --dry-run.
  std::string srun =
      dir.WriteFile("srun",
                    "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nshift\n"
                    "exec hetrun --dry-run \"$@\"\n");
  ::chmod(srun.c_str(), 0755);
  ProcessOptions options;
  options.env = BaseEnv();
  std::map<std::string, std::string>& env = *options.env;
  env["SRUN"] = srun;
  env["MASTER_ADDR"] = "node-a";
  for (auto [name, value] : std::map<std::string, std::string>{{"SLURM_NNODES", "2"},
                                                               {"SLURM_NODEID", "1"},
                                                               {"SLURM_JOB_ID", "77"},
                                                               {"SLURM_PROCID", "1"},
                                                               {"SLURM_NTASKS", "2"},
                                                               {"SLURM_LOCALID", "0"}}) {
    env[name] = value;
  }
  ProcessResult r =
      RunProcess({kExamples + "sbatch.sh", "/workspace/train.py", "--epochs", "3"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* part : {"# rank 8 (local rank 0)", "# rank 15 (local rank 7)", "WORLD_SIZE=16",
                           "GROUP_RANK=1", "MASTER_ADDR=node-a", "TORCHELASTIC_RUN_ID=slurm-77",
                           "command: python3 /workspace/train.py --epochs 3"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out << r.err;
  }
}

TEST(LauncherExamplesTest, PyTorchJobRunsHetrunWithTheOperatorsVariables) {
  std::ifstream in(kExamples + "pytorchjob.yaml");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json job = testing::YamlToJson(text.str());
  EXPECT_EQ(job["apiVersion"], "kubeflow.org/v1");
  EXPECT_EQ(job["kind"], "PyTorchJob");
  const nlohmann::json& specs = job["spec"]["pytorchReplicaSpecs"];
  ASSERT_TRUE(specs.contains("Master") && specs.contains("Worker"));
  const nlohmann::json& container = specs["Worker"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["name"], "pytorch") << "the operator finds its container by this name";
  EXPECT_EQ(container["command"], nlohmann::json::array({"hetrun"}));
  EXPECT_EQ(specs["Worker"]["template"]["spec"]["volumes"][0]["emptyDir"]["medium"], "Memory");
  std::vector<std::string> argv = {HETRUN_BINARY, "--dry-run"};
  for (const auto& arg : container["args"]) argv.push_back(arg.get<std::string>());
  ProcessOptions options;
  options.env = BaseEnv();
  std::map<std::string, std::string>& env = *options.env;
  // What the operator sets in the Worker pod of a 2-pod job with nprocPerNode 8.
  env["PET_NNODES"] = "2";
  env["PET_NODE_RANK"] = "1";
  env["PET_NPROC_PER_NODE"] = job["spec"]["nprocPerNode"].get<std::string>();
  env["MASTER_ADDR"] = "hetrun-train-master-0";
  env["MASTER_PORT"] = "23456";
  env["WORLD_SIZE"] = "2";
  env["RANK"] = "1";
  ProcessResult r = RunProcess(argv, options);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* part : {"# rank 8 (local rank 0)", "# rank 15 (local rank 7)", "WORLD_SIZE=16",
                           "MASTER_ADDR=hetrun-train-master-0", "MASTER_PORT=23456",
                           "command: python3 /workspace/train.py --epochs 3"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out << r.err;
  }
}

}  // namespace
}  // namespace hetrun

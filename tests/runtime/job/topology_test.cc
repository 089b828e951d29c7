// Table-driven tests of ResolveTopology, built from what each convention injects
// (reference/env_contracts.md): Volcano pytorch / svc / env plugins, Kubeflow PyTorchJob,
// Open MPI, MPICH, Slurm, HETRUN_* and flags, and their precedence.
#include "hetrun/job/topology.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hetrun {
namespace {

using Vars = std::map<std::string, std::string>;

// The seed's heterogeneous pipeline job "pipe": heavy-stage-workers x4, light-stage-workers x2,
// svc + env plugins only.
Vars PipelineJob(int index) {
  return {{"VC_HEAVY_STAGE_WORKERS_NUM", "4"},
          {"VC_HEAVY_STAGE_WORKERS_HOSTS",
           "pipe-heavy-stage-workers-0.pipe,pipe-heavy-stage-workers-1.pipe,"
           "pipe-heavy-stage-workers-2.pipe,pipe-heavy-stage-workers-3.pipe"},
          {"VC_LIGHT_STAGE_WORKERS_NUM", "2"},
          {"VC_LIGHT_STAGE_WORKERS_HOSTS",
           "pipe-light-stage-workers-0.pipe,pipe-light-stage-workers-1.pipe"},
          {"VC_TASK_INDEX", std::to_string(index)},
          {"VK_TASK_INDEX", std::to_string(index)}};
}

// Flags from positional strings; "" leaves a flag unset.
TopologyFlags Flags(std::string nnodes, std::string node_rank, std::string nproc,
                    std::string addr = "", std::string port = "") {
  TopologyFlags flags;
  auto set = [](std::optional<std::string>& field, std::string value) {
    if (!value.empty()) field = std::move(value);
  };
  set(flags.nnodes, std::move(nnodes));
  set(flags.node_rank, std::move(node_rank));
  set(flags.nproc_per_node, std::move(nproc));
  set(flags.master_addr, std::move(addr));
  set(flags.master_port, std::move(port));
  return flags;
}

Vars With(Vars base, const Vars& extra) {
  for (const auto& [k, v] : extra) base[k] = v;
  return base;
}

// The Volcano pytorch plugin on job "tj" with master x1 and worker x2 (svc added by the webhook).
Vars PytorchJob(int rank, int index, int masters = 1) {
  Vars vars = {{"MASTER_ADDR", "tj-master-0.tj"},
               {"MASTER_PORT", "23456"},
               {"WORLD_SIZE", std::to_string(masters + 2)},
               {"RANK", std::to_string(rank)},
               {"VC_MASTER_NUM", std::to_string(masters)},
               {"VC_WORKER_NUM", "2"},
               {"VC_WORKER_HOSTS", "tj-worker-0.tj,tj-worker-1.tj"},
               {"VC_TASK_INDEX", std::to_string(index)}};
  std::string hosts;
  for (int i = 0; i < masters; ++i) {
    hosts += (i ? "," : "") + std::string("tj-master-") + std::to_string(i) + ".tj";
  }
  vars["VC_MASTER_HOSTS"] = hosts;
  return vars;
}

Vars OpenMpi(int rank, int size, int local_rank, int local_size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local_rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(local_size)},
          {"OMPI_COMM_WORLD_NODE_RANK", std::to_string(local_rank)}};
}

Vars Slurm(int procid, int ntasks, int localid, int nodeid, int nnodes) {
  return {{"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", std::to_string(ntasks)},
          {"SLURM_LOCALID", std::to_string(localid)},
          {"SLURM_NODEID", std::to_string(nodeid)},
          {"SLURM_NNODES", std::to_string(nnodes)}};
}

struct Expect {
  std::string source;
  int nnodes;
  int node_rank;
  int nproc;
  int world_size;
  std::vector<int> ranks;
  std::string master_addr;
  int master_port;
  std::string task = "";
};

struct Case {
  std::string name;
  Vars env;
  TopologyFlags flags = TopologyFlags();
  std::string hostname = "";
  int gpus = 0;
  std::map<std::string, std::string> host_files = {};
  std::optional<Expect> expect = std::nullopt;  // nullopt: an error
  std::string error = "";                       // substring of the error message
  StatusCode code = StatusCode::kInvalidArgument;
};

Result<Topology> Resolve(const Case& c) {
  TopologyInputs in;
  in.env = Environment(c.env);
  in.flags = c.flags;
  in.hostname = c.hostname;
  in.local_gpu_count = c.gpus;
  in.volcano_host_files = c.host_files;
  return ResolveTopology(in);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto ok = [&](std::string name, Vars env, Expect expect, TopologyFlags flags = TopologyFlags(),
                std::string hostname = "", int gpus = 0,
                std::map<std::string, std::string> files = {}) {
    cases.push_back(Case{std::move(name), std::move(env), std::move(flags), std::move(hostname),
                         gpus, std::move(files), std::move(expect)});
  };
  auto bad = [&](std::string name, Vars env, std::string error,
                 TopologyFlags flags = TopologyFlags(), std::string hostname = "",
                 StatusCode code = StatusCode::kInvalidArgument,
                 std::map<std::string, std::string> files = {}) {
    cases.push_back(Case{std::move(name), std::move(env), std::move(flags), std::move(hostname), 0,
                         std::move(files), std::nullopt, std::move(error), code});
  };

  // --- nothing: single node ---
  ok("NothingIsOneNodeOneWorker", {}, {"single-node", 1, 0, 1, 1, {0}, "127.0.0.1", 29500});
  ok("NothingUsesOneWorkerPerGpu", {},
     {"single-node", 1, 0, 4, 4, {0, 1, 2, 3}, "127.0.0.1", 29500}, {}, "", 4);

  // --- Volcano pytorch plugin: WORLD_SIZE and RANK count pods ---
  ok("PytorchMasterPod", PytorchJob(0, 0),
     {"volcano-pytorch", 3, 0, 1, 3, {0}, "tj-master-0.tj", 23456, "master"}, {}, "tj-master-0");
  ok("PytorchWorkerPod", PytorchJob(2, 1),
     {"volcano-pytorch", 3, 2, 1, 3, {2}, "tj-master-0.tj", 23456, "worker"}, {}, "tj-worker-1");
  ok("PytorchWithNprocFlag", PytorchJob(2, 1),
     {"volcano-pytorch",
      3,
      2,
      8,
      24,
      {16, 17, 18, 19, 20, 21, 22, 23},
      "tj-master-0.tj",
      23456,
      "worker"},
     Flags("", "", "8", "", ""), "tj-worker-1");
  ok("PytorchWithNprocAutoCountsGpus", PytorchJob(1, 0),
     {"volcano-pytorch", 3, 1, 2, 6, {2, 3}, "tj-master-0.tj", 23456, "worker"},
     Flags("", "", "auto", "", ""), "tj-worker-0", 2);
  ok("PytorchWithoutSvc", {{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "m"}},
     {"volcano-pytorch", 2, 1, 1, 2, {1}, "m", 23456});
  ok("PytorchPortFromEnv",
     {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "40000"}},
     {"volcano-pytorch", 2, 0, 1, 2, {0}, "m", 40000});
  bad("PytorchSeveralMastersIsAnError", PytorchJob(0, 1, 2), "VC_MASTER_NUM='2'", {},
      "tj-master-1");
  bad("PytorchRankNotBelowWorldSize", {{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "m"}},
      "RANK='2' (RANK, Volcano pytorch plugin): must be less than WORLD_SIZE=2");
  bad("PytorchWorldSizeNotANumber", {{"WORLD_SIZE", "two"}, {"RANK", "0"}}, "WORLD_SIZE='two'");
  bad("PytorchNegativeRank", {{"WORLD_SIZE", "2"}, {"RANK", "-1"}}, "RANK='-1'");
  bad("PytorchRankWithoutWorldSize", {{"RANK", "0"}}, "WORLD_SIZE is not set");
  bad("PytorchEmptyMasterAddr", {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", ""}},
      "MASTER_ADDR='' (MASTER_ADDR, Volcano pytorch plugin): must not be empty");
  bad("PortZero", {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "0"}},
      "MASTER_PORT='0'");
  bad("PortTooLarge",
      {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "65536"}},
      "MASTER_PORT='65536'");

  // --- Volcano svc + env plugins: the seed's heterogeneous pipeline ---
  ok("SvcFirstHeavyWorker", PipelineJob(0),
     {"volcano-svc",
      6,
      0,
      1,
      6,
      {0},
      "pipe-heavy-stage-workers-0.pipe",
      23456,
      "heavy-stage-workers"},
     {}, "pipe-heavy-stage-workers-0");
  ok("SvcLightWorkerComesAfterHeavy", PipelineJob(1),
     {"volcano-svc",
      6,
      5,
      1,
      6,
      {5},
      "pipe-heavy-stage-workers-0.pipe",
      23456,
      "light-stage-workers"},
     {}, "pipe-light-stage-workers-1");
  ok("SvcTaskOrderPutsLightFirst",
     With(PipelineJob(1), {{"HETRUN_TASK_ORDER", "light-stage-workers,heavy-stage-workers"}}),
     {"volcano-svc",
      6,
      1,
      1,
      6,
      {1},
      "pipe-light-stage-workers-0.pipe",
      23456,
      "light-stage-workers"},
     {}, "pipe-light-stage-workers-1");
  ok("SvcHetrunTaskBeatsHostname", With(PipelineJob(3), {{"HETRUN_TASK", "heavy-stage-workers"}}),
     {"volcano-svc",
      6,
      3,
      1,
      6,
      {3},
      "pipe-heavy-stage-workers-0.pipe",
      23456,
      "heavy-stage-workers"},
     {}, "some-other-name");
  ok("SvcDeprecatedVkTaskIndex",
     {{"VC_A_NUM", "2"}, {"VC_A_HOSTS", "j-a-0.j,j-a-1.j"}, {"VK_TASK_INDEX", "1"}},
     {"volcano-svc", 2, 1, 1, 2, {1}, "j-a-0.j", 23456, "a"}, {}, "j-a-1");
  ok("SvcIndexFromHostnameWhenNoEnvPlugin", {{"VC_A_NUM", "2"}, {"VC_A_HOSTS", "j-a-0.j,j-a-1.j"}},
     {"volcano-svc", 2, 1, 1, 2, {1}, "j-a-0.j", 23456, "a"}, {}, "j-a-1.j.ns.svc.cluster.local");
  ok("SvcMasterTaskFirst",
     {{"VC_MASTER_NUM", "1"},
      {"VC_MASTER_HOSTS", "j-master-0.j"},
      {"VC_AWORKER_NUM", "2"},
      {"VC_AWORKER_HOSTS", "j-aworker-0.j,j-aworker-1.j"},
      {"VC_TASK_INDEX", "0"}},
     {"volcano-svc", 3, 1, 1, 3, {1}, "j-master-0.j", 23456, "aworker"}, {}, "j-aworker-0");
  ok("SvcLongestTaskNameWins",
     {{"VC_STAGE_WORKERS_NUM", "1"},
      {"VC_STAGE_WORKERS_HOSTS", "j-stage-workers-0.j"},
      {"VC_HEAVY_STAGE_WORKERS_NUM", "1"},
      {"VC_HEAVY_STAGE_WORKERS_HOSTS", "j-heavy-stage-workers-0.j"},
      {"VC_TASK_INDEX", "0"}},
     {"volcano-svc", 2, 0, 1, 2, {0}, "j-heavy-stage-workers-0.j", 23456, "heavy-stage-workers"},
     {}, "j-heavy-stage-workers-0");
  ok("SvcHostFilesWhenNoEnv", {{"VC_TASK_INDEX", "1"}},
     {"volcano-svc",
      6,
      1,
      1,
      6,
      {1},
      "pipe-heavy-stage-workers-0.pipe",
      23456,
      "heavy-stage-workers"},
     {}, "pipe-heavy-stage-workers-1", 0,
     {{"heavy_stage_workers",
       "pipe-heavy-stage-workers-0.pipe\npipe-heavy-stage-workers-1.pipe\n"
       "pipe-heavy-stage-workers-2.pipe\npipe-heavy-stage-workers-3.pipe"},
      {"light_stage_workers",
       "pipe-light-stage-workers-0.pipe\npipe-light-stage-workers-1.pipe\n"}});
  ok("SvcMasterPortFromEnv", With(PipelineJob(0), {{"MASTER_PORT", "30000"}}),
     {"volcano-svc",
      6,
      0,
      1,
      6,
      {0},
      "pipe-heavy-stage-workers-0.pipe",
      30000,
      "heavy-stage-workers"},
     {}, "pipe-heavy-stage-workers-0");
  ok("SvcMasterAddrFromEnv", With(PipelineJob(0), {{"MASTER_ADDR", "rdzv.example"}}),
     {"volcano-svc", 6, 0, 1, 6, {0}, "rdzv.example", 23456, "heavy-stage-workers"}, {},
     "pipe-heavy-stage-workers-0");
  ok("SvcWithFakeGpusAuto", PipelineJob(1),
     {"volcano-svc",
      6,
      1,
      6,
      36,
      {6, 7, 8, 9, 10, 11},
      "pipe-heavy-stage-workers-0.pipe",
      23456,
      "heavy-stage-workers"},
     Flags("", "", "auto", "", ""), "pipe-heavy-stage-workers-1", 6);
  bad("SvcIndexNotBelowNum", PipelineJob(2), "VC_TASK_INDEX='2'", {}, "pipe-light-stage-workers-2");
  bad("SvcHostsShorterThanNum",
      {{"VC_A_NUM", "3"}, {"VC_A_HOSTS", "j-a-0.j,j-a-1.j"}, {"VC_TASK_INDEX", "0"}},
      "VC_A_HOSTS='j-a-0.j,j-a-1.j' (VC_A_HOSTS, Volcano svc plugin): lists 2 hosts but "
      "VC_A_NUM=3",
      {}, "j-a-0");
  bad("SvcNumNotANumber", {{"VC_A_NUM", "x"}}, "VC_A_NUM='x'", {}, "j-a-0");
  bad("SvcNegativeNum", {{"VC_A_NUM", "-2"}}, "VC_A_NUM='-2'", {}, "j-a-0");
  bad("SvcEmptyHostInList", {{"VC_A_HOSTS", "j-a-0.j,,j-a-2.j"}}, "empty host name", {}, "j-a-0");
  bad("SvcUnknownTaskInOrder",
      With(PipelineJob(0), {{"HETRUN_TASK_ORDER", "heavy-stage-workers,ps"}}),
      "HETRUN_TASK_ORDER='heavy-stage-workers,ps' (environment): unknown task 'ps'", {},
      "pipe-heavy-stage-workers-0");
  bad("SvcTaskListedTwiceInOrder",
      With(PipelineJob(0), {{"HETRUN_TASK_ORDER", "heavy-stage-workers,heavy-stage-workers"}}),
      "listed twice", {}, "pipe-heavy-stage-workers-0");
  bad("SvcHostnameMatchesNoTask", PipelineJob(0), "HOSTNAME='laptop' (host name): matches no", {},
      "laptop");
  bad("SvcUnknownHetrunTask", With(PipelineJob(0), {{"HETRUN_TASK", "ps"}}), "HETRUN_TASK='ps'", {},
      "pipe-heavy-stage-workers-0");
  bad("SvcIndexNotANumber", With(PipelineJob(0), {{"VC_TASK_INDEX", "zero"}}),
      "VC_TASK_INDEX='zero'", {}, "pipe-heavy-stage-workers-0");
  bad("SvcVkAndVcDisagree", With(PipelineJob(0), {{"VK_TASK_INDEX", "1"}}),
      "differs from VC_TASK_INDEX=0", {}, "pipe-heavy-stage-workers-0");

  // --- Kubeflow PyTorchJob ---
  Vars kubeflow = {{"PET_NNODES", "3"},
                   {"PET_NODE_RANK", "2"},
                   {"PET_NPROC_PER_NODE", "4"},
                   {"MASTER_ADDR", "kj-master-0"},
                   {"MASTER_PORT", "23456"},
                   {"PET_MASTER_ADDR", "kj-master-0"},
                   {"PET_MASTER_PORT", "23456"},
                   {"WORLD_SIZE", "12"},
                   {"RANK", "2"}};
  ok("KubeflowWorker", kubeflow,
     {"kubeflow-pytorchjob", 3, 2, 4, 12, {8, 9, 10, 11}, "kj-master-0", 23456});
  ok("KubeflowNprocAutoIsGpuCount",
     With(kubeflow, {{"PET_NPROC_PER_NODE", "auto"}, {"WORLD_SIZE", "3"}}),
     {"kubeflow-pytorchjob", 3, 2, 2, 6, {4, 5}, "kj-master-0", 23456}, {}, "", 2);
  ok("KubeflowFixedElasticRange", With(kubeflow, {{"PET_NNODES", "3:3"}}),
     {"kubeflow-pytorchjob", 3, 2, 4, 12, {8, 9, 10, 11}, "kj-master-0", 23456});
  ok("KubeflowPetMasterWhenNoPlainMaster",
     {{"PET_NNODES", "2"},
      {"PET_NODE_RANK", "0"},
      {"PET_MASTER_ADDR", "pm"},
      {"PET_MASTER_PORT", "1234"}},
     {"kubeflow-pytorchjob", 2, 0, 1, 2, {0}, "pm", 1234});
  bad("KubeflowElasticRangeIsAnError", With(kubeflow, {{"PET_NNODES", "1:4"}}),
      "PET_NNODES='1:4' (PET_NNODES, Kubeflow PyTorchJob): elastic");
  bad("KubeflowNodeRankNotBelowNnodes", With(kubeflow, {{"PET_NODE_RANK", "3"}}),
      "PET_NODE_RANK='3'");
  bad("KubeflowNprocCpu", With(kubeflow, {{"PET_NPROC_PER_NODE", "cpu"}}),
      "PET_NPROC_PER_NODE='cpu'");

  // --- per-process launchers ---
  ok("OpenMpiOneNode", OpenMpi(3, 4, 3, 4), {"open-mpi", 1, 0, 1, 4, {3}, "127.0.0.1", 29500});
  ok("OpenMpiTwoNodesDerivesNodeRank", With(OpenMpi(5, 8, 1, 4), {{"MASTER_ADDR", "n0"}}),
     {"open-mpi", 2, 1, 1, 8, {5}, "n0", 29500});
  ok("MpichHydra",
     {{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "2"}, {"MPI_LOCALNRANKS", "3"}},
     {"mpich", 1, 0, 1, 3, {2}, "127.0.0.1", 29500});
  ok("SlurmStatesNodeIndex", With(Slurm(5, 8, 1, 2, 4), {{"MASTER_ADDR", "node0"}}),
     {"slurm", 4, 2, 1, 8, {5}, "node0", 29500});
  ok("OpenMpiInsideSlurmUsesOpenMpiRanks",
     With(With(OpenMpi(6, 8, 2, 4), Slurm(0, 1, 0, 1, 2)), {{"MASTER_ADDR", "node0"}}),
     {"open-mpi", 2, 1, 1, 8, {6}, "node0", 29500});
  ok("OpenMpiWithNprocIsOneHetrunPerNode", With(OpenMpi(1, 2, 0, 1), {{"MASTER_ADDR", "n0"}}),
     {"open-mpi", 2, 1, 4, 8, {4, 5, 6, 7}, "n0", 29500}, Flags("", "", "4", "", ""));
  bad("OpenMpiRankNotBelowSize", OpenMpi(4, 4, 0, 4), "OMPI_COMM_WORLD_RANK='4'");
  bad("OpenMpiMissingSize", {{"OMPI_COMM_WORLD_RANK", "0"}}, "OMPI_COMM_WORLD_SIZE is not set");
  bad("SlurmNodeIdNotBelowNnodes", Slurm(0, 2, 0, 2, 2), "SLURM_NODEID='2'");
  bad("MpichSizeNotANumber",
      {{"PMI_RANK", "0"}, {"PMI_SIZE", "1e3"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}},
      "PMI_SIZE='1e3'");
  bad("MultiNodeMpiWithoutMasterAddr", OpenMpi(5, 8, 1, 4), "master address is unknown", {}, "",
      StatusCode::kNotFound);

  // --- HETRUN_* and flags ---
  ok("HetrunVarsAlone",
     {{"HETRUN_NNODES", "2"},
      {"HETRUN_NODE_RANK", "1"},
      {"HETRUN_NPROC_PER_NODE", "2"},
      {"HETRUN_MASTER_ADDR", "h0"},
      {"HETRUN_MASTER_PORT", "5000"}},
     {"hetrun-env", 2, 1, 2, 4, {2, 3}, "h0", 5000});
  ok("FlagsBeatHetrunVars",
     {{"HETRUN_NNODES", "2"}, {"HETRUN_NODE_RANK", "1"}, {"HETRUN_MASTER_ADDR", "h0"}},
     {"flags", 4, 3, 1, 4, {3}, "f0", 6000}, Flags("4", "3", "1", "f0", "6000"));
  ok("HetrunNodeRankBeatsPytorchRank",
     {{"WORLD_SIZE", "3"}, {"RANK", "1"}, {"MASTER_ADDR", "m"}, {"HETRUN_NODE_RANK", "2"}},
     {"volcano-pytorch", 3, 2, 1, 3, {2}, "m", 23456});
  bad("FlagNodeRankNotANumber", {}, "--node-rank='x' (--node-rank flag)",
      Flags("", "x", "", "", ""), "", StatusCode::kUsage);
  bad("FlagPortOutOfRange", {}, "--master-port='70000'", Flags("", "", "", "", "70000"), "",
      StatusCode::kUsage);
  bad("FlagNodeRankNotBelowNnodes", {}, "must be less than nnodes=2", Flags("2", "2", "", "a", ""),
      "", StatusCode::kUsage);
  bad("HetrunNnodesNegative", {{"HETRUN_NNODES", "-3"}}, "HETRUN_NNODES='-3' (environment)");
  bad("HetrunNprocZero", {{"HETRUN_NPROC_PER_NODE", "0"}}, "HETRUN_NPROC_PER_NODE='0'");
  bad("HetrunEmptyMasterAddr", {{"HETRUN_MASTER_ADDR", ""}}, "HETRUN_MASTER_ADDR=''");
  bad("MultiNodeWithoutNodeRank", {{"HETRUN_NNODES", "2"}}, "node's rank is unknown", {}, "",
      StatusCode::kNotFound);
  bad("BinaryValueIsShownSafely", {{"WORLD_SIZE", std::string("4\0\x01\xff", 4)}, {"RANK", "0"}},
      "WORLD_SIZE='4?"
      "?"
      "?'");
  bad("HugeValueIsCut", {{"WORLD_SIZE", std::string(100000, '9')}, {"RANK", "0"}},
      "...(100000 bytes)");
  return cases;
}

class TopologyTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(TopologyTableTest, ResolvesAsTheConventionSays) {
  const Case& c = GetParam();
  Result<Topology> topology = Resolve(c);
  if (!c.expect) {
    ASSERT_FALSE(topology.ok()) << "expected an error containing: " << c.error;
    EXPECT_EQ(topology.status().code(), c.code) << topology.status().ToString();
    EXPECT_NE(topology.status().message().find(c.error), std::string::npos)
        << topology.status().message();
    EXPECT_EQ(topology.status().message().find('\n'), std::string::npos) << "one line";
    return;
  }
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  const Expect& e = *c.expect;
  EXPECT_EQ(topology->source, e.source);
  EXPECT_EQ(topology->nnodes.value, e.nnodes) << topology->nnodes.source;
  EXPECT_EQ(topology->node_rank.value, e.node_rank) << topology->node_rank.source;
  EXPECT_EQ(topology->nproc_per_node.value, e.nproc) << topology->nproc_per_node.source;
  EXPECT_EQ(topology->world_size, e.world_size);
  EXPECT_EQ(topology->ranks, e.ranks);
  EXPECT_EQ(topology->master_addr.value, e.master_addr) << topology->master_addr.source;
  EXPECT_EQ(topology->master_port.value, e.master_port) << topology->master_port.source;
  EXPECT_EQ(topology->task ? topology->task->value : "", e.task);
  EXPECT_EQ(topology->local_ranks.size(), topology->ranks.size());
  EXPECT_FALSE(topology->nnodes.source.empty());
  EXPECT_FALSE(topology->node_rank.source.empty());
}

INSTANTIATE_TEST_SUITE_P(Conventions, TopologyTableTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(TopologyTest, TableHasAtLeastFortyCases) {
  EXPECT_GE(Cases().size(), 40u);
}

TEST(TopologyTest, PytorchPluginSourceSaysItCountsPods) {
  TopologyInputs in;
  in.env = Environment({{"WORLD_SIZE", "3"}, {"RANK", "1"}, {"MASTER_ADDR", "m"}});
  Result<Topology> t = ResolveTopology(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->nnodes.source, "WORLD_SIZE, Volcano pytorch plugin: counts pods");
}

TEST(TopologyTest, OpenMpiInsideSlurmRecordsOverriddenSlurmValues) {
  Vars vars = With(OpenMpi(6, 8, 2, 4), Slurm(0, 1, 0, 1, 2));
  vars["MASTER_ADDR"] = "node0";
  TopologyInputs in;
  in.env = Environment(vars);
  Result<Topology> t = ResolveTopology(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->per_process);
  EXPECT_EQ(t->local_ranks, std::vector<int>{2});
  EXPECT_EQ(t->local_world_size, 4);
  bool rank_override = false;
  for (const Override& o : t->overrides) {
    if (o.field == "rank") {
      rank_override = true;
      EXPECT_EQ(o.winner, "6 (OMPI_COMM_WORLD_RANK, Open MPI)");
      EXPECT_EQ(o.overridden, "0 (SLURM_PROCID, Slurm)");
    }
  }
  EXPECT_TRUE(rank_override);
  // The node index is stated by Slurm, so the by-slot derivation is not used.
  EXPECT_EQ(t->node_rank.source, "SLURM_NODEID, Slurm");
}

TEST(TopologyTest, FlagOverrideOfHetrunVarIsRecordedWithBothValues) {
  TopologyInputs in;
  in.env =
      Environment({{"HETRUN_NNODES", "2"}, {"HETRUN_NODE_RANK", "1"}, {"HETRUN_MASTER_ADDR", "a"}});
  in.flags.node_rank = "0";
  Result<Topology> t = ResolveTopology(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->overrides.size(), 1u);
  EXPECT_EQ(t->overrides[0].field, "node_rank");
  EXPECT_EQ(t->overrides[0].winner, "0 (--node-rank flag)");
  EXPECT_EQ(t->overrides[0].overridden, "1 (HETRUN_NODE_RANK)");
}

TEST(TopologyTest, OpenMpiDerivedNodeRankIsExplainedInANote) {
  TopologyInputs in;
  in.env = Environment(With(OpenMpi(5, 8, 1, 4), {{"MASTER_ADDR", "n0"}}));
  Result<Topology> t = ResolveTopology(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_FALSE(t->notes.empty());
  EXPECT_NE(t->notes[0].find("OMPI_COMM_WORLD_NODE_RANK is not one"), std::string::npos);
}

TEST(TopologyTest, SvcTasksCarryHostsInOrder) {
  TopologyInputs in;
  in.env = Environment(PipelineJob(0));
  in.hostname = "pipe-heavy-stage-workers-0";
  Result<Topology> t = ResolveTopology(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->tasks.size(), 2u);
  EXPECT_EQ(t->tasks[0].name, "heavy-stage-workers");
  EXPECT_EQ(t->tasks[0].replicas, 4);
  EXPECT_EQ(t->tasks[1].name, "light-stage-workers");
  EXPECT_EQ(t->tasks[1].hosts.size(), 2u);
  ASSERT_TRUE(t->task_index.has_value());
  EXPECT_EQ(t->task_index->value, 0);
}

TEST(TopologyTest, NeedsGpuCountOnlyForAuto) {
  EXPECT_TRUE(NeedsLocalGpuCount(Environment{}, {}));
  EXPECT_TRUE(NeedsLocalGpuCount(Environment{}, Flags("", "", "auto", "", "")));
  EXPECT_FALSE(NeedsLocalGpuCount(Environment{}, Flags("", "", "2", "", "")));
  EXPECT_FALSE(NeedsLocalGpuCount(Environment({{"HETRUN_NPROC_PER_NODE", "2"}}), {}));
  EXPECT_FALSE(NeedsLocalGpuCount(Environment(OpenMpi(0, 1, 0, 1)), {}));
  EXPECT_TRUE(NeedsLocalGpuCount(Environment({{"PET_NPROC_PER_NODE", "gpu"}}), {}));
}

}  // namespace
}  // namespace hetrun

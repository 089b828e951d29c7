// ResolveTopology on the environment of a JobSet pod (docs/ARCHITECTURE.md §4.1, the JobSet level):
// what `hetrun plan --emit jobset` writes into every pod (HETRUN_TASK, HETRUN_TASK_ORDER,
// HETRUN_JOBSET_REPLICAS) plus what the downward API fills from JobSet's pod labels and what an
// Indexed Job sets (JOB_COMPLETION_INDEX).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "hetrun/job/topology.h"

namespace hetrun {
namespace {

using Vars = std::map<std::string, std::string>;

// The seed's pipeline as the JobSet "pipe": light-stage-workers x2, then heavy-stage-workers x4.
Vars JobSetPod(const std::string& task, int job_index, int global_index) {
  return {{"HETRUN_TASK", task},
          {"HETRUN_TASK_ORDER", "light-stage-workers,heavy-stage-workers"},
          {"HETRUN_JOBSET_REPLICAS", "2,4"},
          {"HETRUN_JOBSET_NAME", "pipe"},
          {"HETRUN_JOBSET_JOB_INDEX", std::to_string(job_index)},
          {"HETRUN_JOBSET_GLOBAL_INDEX", std::to_string(global_index)},
          {"HETRUN_JOBSET_RESTART_ATTEMPT", "2"},
          {"JOB_COMPLETION_INDEX", "0"}};
}

Result<Topology> Resolve(const Vars& vars) {
  TopologyInputs in;
  in.env = Environment(vars);
  in.local_gpu_count = 4;
  return ResolveTopology(in);
}

TEST(JobSetTopologyTest, GlobalIndexIsTheNodeRankAndNodeZeroIsTheFirstTasksFirstPod) {
  Result<Topology> t = Resolve(JobSetPod("heavy-stage-workers", 1, 3));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->source, "jobset");
  EXPECT_EQ(t->nnodes.value, 6) << t->nnodes.source;
  EXPECT_EQ(t->node_rank.value, 3);
  EXPECT_EQ(t->node_rank.source, "HETRUN_JOBSET_GLOBAL_INDEX, JobSet label job-global-index");
  EXPECT_EQ(t->master_addr.value, "pipe-light-stage-workers-0-0.pipe");
  EXPECT_EQ(t->master_port.value, 29500);
  EXPECT_EQ(t->ranks, (std::vector<int>{12, 13, 14, 15}));
  ASSERT_TRUE(t->task && t->task_index);
  EXPECT_EQ(t->task->value, "heavy-stage-workers");
  EXPECT_EQ(t->task_index->value, 1) << "the entry of HETRUN_STAGE this pod takes";
  ASSERT_TRUE(t->incarnation.has_value());
  EXPECT_EQ(t->incarnation->value, 2);
  ASSERT_EQ(t->tasks.size(), 2u);
  EXPECT_EQ(t->tasks[1].hosts[3], "pipe-heavy-stage-workers-3-0.pipe");
}

TEST(JobSetTopologyTest, JobIndexPlusTheTasksOffsetGivesTheRankWithoutTheGlobalIndexLabel) {
  Vars vars = JobSetPod("heavy-stage-workers", 2, 0);
  vars["HETRUN_JOBSET_GLOBAL_INDEX"] = "";  // an older JobSet: the label is absent
  Result<Topology> t = Resolve(vars);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->node_rank.value, 4);
  EXPECT_NE(t->node_rank.source.find("offset of task 'heavy-stage-workers' in HETRUN_TASK_ORDER"),
            std::string::npos)
      << t->node_rank.source;
}

TEST(JobSetTopologyTest, FirstTasksPodsComeFirst) {
  Result<Topology> t = Resolve(JobSetPod("light-stage-workers", 1, 1));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->node_rank.value, 1);
}

TEST(JobSetTopologyTest, HetrunVariablesOverrideTheJobSetAndTheOverrideIsShown) {
  Vars vars = JobSetPod("heavy-stage-workers", 0, 2);
  vars["HETRUN_MASTER_ADDR"] = "rendezvous.example";
  Result<Topology> t = Resolve(vars);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->master_addr.value, "rendezvous.example");
  ASSERT_EQ(t->overrides.size(), 1u);
  EXPECT_EQ(t->overrides[0].field, "master_addr");
}

TEST(JobSetTopologyTest, VolcanoVariablesWinOverJobSetOnes) {
  Vars vars = JobSetPod("heavy-stage-workers", 0, 2);
  vars["VC_HEAVY_STAGE_WORKERS_NUM"] = "1";
  vars["VC_HEAVY_STAGE_WORKERS_HOSTS"] = "v-heavy-stage-workers-0.v";
  vars["VC_TASK_INDEX"] = "0";
  vars["HETRUN_TASK_ORDER"] = "heavy-stage-workers";
  vars["HETRUN_JOBSET_REPLICAS"] = "1";
  vars["HETRUN_JOBSET_GLOBAL_INDEX"] = "0";
  Result<Topology> t = Resolve(vars);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->source, "volcano-svc");
  EXPECT_EQ(t->master_addr.value, "v-heavy-stage-workers-0.v");
}

struct BadCase {
  const char* name;
  Vars change;
  const char* error;
};

class JobSetTopologyErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(JobSetTopologyErrorTest, InconsistentPodEnvironmentIsAnErrorNamingTheVariable) {
  Vars vars = JobSetPod("heavy-stage-workers", 1, 3);
  for (const auto& [name, value] : GetParam().change) {
    if (value == "<unset>") {
      vars.erase(name);
    } else {
      vars[name] = value;
    }
  }
  Result<Topology> t = Resolve(vars);
  ASSERT_FALSE(t.ok()) << "expected: " << GetParam().error;
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().ToString();
  EXPECT_NE(t.status().message().find(GetParam().error), std::string::npos) << t.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    JobSet, JobSetTopologyErrorTest,
    ::testing::Values(
        BadCase{"GlobalIndexDisagreesWithJobIndex",
                {{"HETRUN_JOBSET_GLOBAL_INDEX", "4"}},
                "HETRUN_JOBSET_GLOBAL_INDEX='4' (JobSet): differs from the node rank 3"},
        BadCase{"JobIndexPastReplicas",
                {{"HETRUN_JOBSET_JOB_INDEX", "4"}},
                "HETRUN_JOBSET_JOB_INDEX='4' (JobSet): must be less than the 4 Jobs"},
        BadCase{"SecondPodInAJob", {{"JOB_COMPLETION_INDEX", "1"}}, "JOB_COMPLETION_INDEX='1'"},
        BadCase{"ReplicasDoNotMatchTheOrder",
                {{"HETRUN_JOBSET_REPLICAS", "2,4,1"}},
                "HETRUN_JOBSET_REPLICAS='2,4,1' (environment): has 3 entries"},
        BadCase{"ReplicasNotANumber",
                {{"HETRUN_JOBSET_REPLICAS", "2,x"}},
                "HETRUN_JOBSET_REPLICAS='2,x'"},
        BadCase{
            "ReplicasWithoutOrder", {{"HETRUN_TASK_ORDER", "<unset>"}}, "needs HETRUN_TASK_ORDER"},
        BadCase{"UnknownTask", {{"HETRUN_TASK", "middle"}}, "HETRUN_TASK='middle'"},
        BadCase{"NoReplicasNoNodeCount",
                {{"HETRUN_JOBSET_REPLICAS", "<unset>"}},
                "HETRUN_JOBSET_REPLICAS is not set"},
        BadCase{"RestartAttemptNotANumber",
                {{"HETRUN_JOBSET_RESTART_ATTEMPT", "-1"}},
                "HETRUN_JOBSET_RESTART_ATTEMPT='-1'"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hetrun

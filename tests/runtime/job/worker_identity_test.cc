#include "hetrun/job/worker_identity.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hetrun {
namespace {

TEST(WorkerIdentityTest, NothingSetIsASingleProcess) {
  Result<WorkerIdentity> id = ReadWorkerIdentity(Environment());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->rank, 0);
  EXPECT_EQ(id->world_size, 1);
  EXPECT_EQ(id->source, "single process");
  EXPECT_EQ(id->master_port, kDefaultStorePort);
  EXPECT_FALSE(id->launcher_hosts_store);
}

TEST(WorkerIdentityTest, ReadsTorchrunVariables) {
  Environment env({{"RANK", "5"},
                   {"WORLD_SIZE", "6"},
                   {"LOCAL_RANK", "1"},
                   {"LOCAL_WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "10.0.0.7"},
                   {"MASTER_PORT", "29400"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                   {"TORCHELASTIC_RESTART_COUNT", "2"}});
  Result<WorkerIdentity> id = ReadWorkerIdentity(env);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->rank, 5);
  EXPECT_EQ(id->world_size, 6);
  EXPECT_EQ(id->local_rank, 1);
  EXPECT_EQ(id->local_world_size, 2);
  EXPECT_EQ(id->master_addr, "10.0.0.7");
  EXPECT_EQ(id->master_port, 29400);
  EXPECT_TRUE(id->launcher_hosts_store);
  EXPECT_EQ(id->restart_count, 2);
  EXPECT_EQ(id->source, "RANK/WORLD_SIZE");
}

TEST(WorkerIdentityTest, MultiProcessWorldNeedsTheStoreAddress) {
  Result<WorkerIdentity> id = ReadWorkerIdentity(Environment({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("MASTER_ADDR"), std::string::npos);
  // A world of one needs no store.
  EXPECT_TRUE(ReadWorkerIdentity(Environment({{"RANK", "0"}, {"WORLD_SIZE", "1"}})).ok());
}

TEST(WorkerIdentityTest, RankWithoutWorldSizeIsAnError) {
  Result<WorkerIdentity> id = ReadWorkerIdentity(Environment({{"RANK", "0"}}));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("WORLD_SIZE is not"), std::string::npos);
  EXPECT_FALSE(ReadWorkerIdentity(Environment({{"WORLD_SIZE", "2"}})).ok());
}

TEST(WorkerIdentityTest, RejectsOutOfRangeValuesNamingTheVariable) {
  const std::map<std::string, std::string> base = {{"MASTER_ADDR", "127.0.0.1"},
                                                   {"MASTER_PORT", "29500"}};
  struct Case {
    std::map<std::string, std::string> vars;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {{{"RANK", "2"}, {"WORLD_SIZE", "2"}}, "RANK=2"},
           {{{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "RANK=x"},
           {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE=0"},
           {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}, "MASTER_PORT=70000"},
           {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "2"}},
            "local rank 3"},
       }) {
    std::map<std::string, std::string> vars = c.vars;
    for (const auto& [k, v] : base) vars.emplace(k, v);
    Result<WorkerIdentity> id = ReadWorkerIdentity(Environment(vars));
    ASSERT_FALSE(id.ok()) << c.names;
    EXPECT_NE(id.status().ToString().find(c.names), std::string::npos) << id.status().ToString();
  }
}

TEST(WorkerIdentityTest, ReadsOpenMpiWithDefaultStoreAddress) {
  Environment env({{"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  Result<WorkerIdentity> id = ReadWorkerIdentity(env);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->rank, 3);
  EXPECT_EQ(id->world_size, 4);
  EXPECT_EQ(id->local_rank, 1);
  EXPECT_EQ(id->local_world_size, 2);
  EXPECT_EQ(id->master_addr, "127.0.0.1");
  EXPECT_EQ(id->master_port, kDefaultStorePort);
  EXPECT_EQ(id->source, "Open MPI");
}

TEST(WorkerIdentityTest, ReadsMpich) {
  Result<WorkerIdentity> id = ReadWorkerIdentity(
      Environment({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MASTER_PORT", "29600"}}));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->rank, 1);
  EXPECT_EQ(id->world_size, 2);
  EXPECT_EQ(id->master_port, 29600);
  EXPECT_EQ(id->source, "MPICH");
}

TEST(WorkerIdentityTest, TorchrunVariablesTakePrecedenceOverMpi) {
  Environment env({{"RANK", "0"},
                   {"WORLD_SIZE", "1"},
                   {"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "4"}});
  Result<WorkerIdentity> id = ReadWorkerIdentity(env);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->rank, 0);
  EXPECT_EQ(id->source, "RANK/WORLD_SIZE");
}

TEST(WorkerIdentityTest, HalfAnMpiPairIsAnError) {
  Result<WorkerIdentity> id = ReadWorkerIdentity(Environment({{"OMPI_COMM_WORLD_RANK", "0"}}));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("OMPI_COMM_WORLD_SIZE"), std::string::npos);
}

}  // namespace
}  // namespace hetrun

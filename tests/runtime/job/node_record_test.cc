#include "hetrun/job/node_record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hetrun {
namespace {

NodeRecord Record(int rank, int nnodes = 3) {
  NodeRecord r;
  r.hostname = "host-" + std::to_string(rank);
  r.node_rank = rank;
  r.nnodes = nnodes;
  r.world_size = nnodes * 2;
  r.local_world_size = 2;
  r.instance = r.hostname + ":1:abc";
  r.hetrun_version = "0.1.0";
  r.nccl_version = "2.28.9";
  GpuInfo gpu;
  gpu.name = rank == 0 ? "A100-SXM4-80GB" : "H100-SXM5-80GB";
  gpu.major = rank == 0 ? 8 : 9;
  gpu.usable_bytes = uint64_t{81049} << 20;
  gpu.family = rank == 0 ? "ampere" : "hopper";
  r.gpus = {gpu, gpu};
  return r;
}

TEST(NodeRecordTest, RoundTripsThroughJson) {
  NodeRecord r = Record(1);
  r.arch_checked = true;
  r.arch_rows = {{"9.0", "/lib/x.so", "sass", false}};
  auto back = DecodeNodeRecord(EncodeNodeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(EncodeNodeRecord(*back), EncodeNodeRecord(r));
  EXPECT_EQ(back->gpus[0].CapabilityString(), "9.0");
}

TEST(NodeRecordTest, APipelineStageEntryRoundTripsAndIsOptional) {
  NodeRecord r = Record(1);
  r.stage = 3;
  r.stage_first_layer = 46;
  r.stage_layers = 14;
  r.ranks = {6, 7};
  auto back = DecodeNodeRecord(EncodeNodeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->stage, 3);
  EXPECT_EQ(back->stage_first_layer, 46);
  EXPECT_EQ(back->stage_layers, 14);
  EXPECT_EQ(back->ranks, (std::vector<int>{6, 7}));
  // A record without the keys (an older launcher of this schema) has no stage.
  nlohmann::json j = nlohmann::json::parse(EncodeNodeRecord(Record(1)));
  for (const char* key : {"stage", "stage_first_layer", "stage_layers", "ranks"}) j.erase(key);
  auto old = DecodeNodeRecord(j.dump());
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->stage, -1);
  EXPECT_TRUE(old->ranks.empty());
}

TEST(NodeRecordTest, NodeZerosLayoutStateRoundTripsAndIsAbsentWhenEmpty) {
  NodeRecord r = Record(0);
  r.layout_state_path = "/ckpt/layout.json";
  r.layout_state = "{\"revision\": 2,\n \"stages\": []}";
  auto back = DecodeNodeRecord(EncodeNodeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->layout_state_path, "/ckpt/layout.json");
  EXPECT_EQ(back->layout_state, r.layout_state);
  const std::string none = EncodeNodeRecord(Record(1));
  EXPECT_EQ(none.find("layout_state"), std::string::npos) << none;
  auto without = DecodeNodeRecord(none);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_TRUE(without->layout_state.empty());
}

TEST(NodeRecordTest, MalformedJsonIsAnErrorNotACrash) {
  for (const char* text : {"", "{", "[]", "{\"schema\":1}", "{\"schema\":2}", "null"}) {
    auto r = DecodeNodeRecord(text);
    EXPECT_FALSE(r.ok()) << text;
  }
}

TEST(NodeRecordTest, ABadCapabilityIsAnErrorNamingTheGpu) {
  const std::string good = EncodeNodeRecord(Record(1));
  for (const char* bad : {"9", "9.", ".0", "x.y", "9.0.1", "99999999999.0", "-1.0"}) {
    std::string text = good;
    size_t at = text.find("\"capability\":\"9.0\"");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 18, std::string("\"capability\":\"") + bad + "\"");
    Result<NodeRecord> r = DecodeNodeRecord(text);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("GPU 'H100-SXM5-80GB': capability '" + std::string(bad) +
                                        "' is not MAJOR.MINOR"),
              std::string::npos)
        << r.status().message();
  }
}

TEST(NodeRecordTest, DuplicateNodeRankNamesBothNodes) {
  std::vector<NodeRecord> records = {Record(0), Record(1), Record(1)};
  records[2].hostname = "other";
  Status s = ValidateJob(records);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("node 1 (host-1)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("node 1 (other)"), std::string::npos) << s.message();
}

TEST(NodeRecordTest, DisagreeingWorldSizesNameBothNodes) {
  std::vector<NodeRecord> records = {Record(0), Record(1), Record(2)};
  records[2].world_size = 8;
  Status s = ValidateJob(records);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("world size differs between nodes: node 0 (host-0) has 6, node 2 "
                             "(host-2) has 8"),
            std::string::npos)
      << s.message();
}

TEST(NodeRecordTest, VersionMismatchesAreConfigurationErrors) {
  NodeRecord other = Record(1);
  other.hetrun_version = "0.2.0";
  EXPECT_NE(CheckSameJob(Record(0), other).message().find("hetrun version"), std::string::npos);
  other = Record(1);
  other.nccl_version = "2.27.3";
  EXPECT_NE(CheckSameJob(Record(0), other).message().find("NCCL version"), std::string::npos);
  other.nccl_version = "";  // unknown: not compared
  EXPECT_TRUE(CheckSameJob(Record(0), other).ok());
}

// --check-collectives on node 0 only: node 0's probes would wait for node 1's for ever (75 on
// every restart); the rendezvous compares it like the job's size (78 naming both nodes).
TEST(NodeRecordTest, CheckCollectivesOnSomeNodesOnlyIsAConfigurationErrorNamingBoth) {
  std::vector<NodeRecord> records = {Record(0), Record(1), Record(2)};
  records[0].check_collectives = true;
  Status s = ValidateJob(records);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--check-collectives (a job-wide setting: every node's probes join "
                             "one group) differs between nodes: node 0 (host-0) has it on, node 1 "
                             "(host-1) has it off"),
            std::string::npos)
      << s.message();
  for (NodeRecord& r : records) r.check_collectives = true;
  EXPECT_TRUE(ValidateJob(records).ok());
  auto back = DecodeNodeRecord(EncodeNodeRecord(records[1]));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->check_collectives);
}

TEST(NodeRecordTest, LocalWorkersMustAddUpToTheWorldSize) {
  std::vector<NodeRecord> records = {Record(0), Record(1), Record(2)};
  records[1].local_world_size = 1;
  EXPECT_NE(ValidateJob(records).message().find("2 + 1 + 2 = 5"), std::string::npos);
}

TEST(NodeRecordTest, CompleteJobPassesAndListsCapabilitiesAndGpus) {
  std::vector<NodeRecord> records = {Record(2), Record(0), Record(1)};
  EXPECT_TRUE(ValidateJob(records).ok());
  EXPECT_EQ(JobCapabilities(records), (std::vector<std::string>{"8.0", "9.0"}));
  auto gpus = JobGpus(records);
  ASSERT_EQ(gpus.size(), 6u);
  EXPECT_EQ(gpus[0].node_rank, 0);
  EXPECT_EQ(gpus[5].node_rank, 2);
  EXPECT_EQ(gpus[5].index, 1);
}

}  // namespace
}  // namespace hetrun

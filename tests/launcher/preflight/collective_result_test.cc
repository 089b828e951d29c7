// The collective-check result as hetrun reads it (preflight/collective/collective_result.h): every field the
// verdict reads is checked, and the size bound grows with the job.
#include "preflight/collective/collective_result.h"

#include <gtest/gtest.h>

namespace hetrun::launcher {
namespace {

using Json = nlohmann::json;

Json Wrong(Json rank) {
  return Json{{"op", "all_reduce"}, {"bytes", 1024},      {"rank", std::move(rank)},
              {"node", 0},          {"family", "hopper"}, {"element", 3},
              {"expected", 2.0},    {"got", 3.0},         {"wrong_elements", 1}};
}

TEST(CollectiveResultTest, AWellFormedSummaryPasses) {
  Json result = {{"backend", "gloo"},
                 {"world_size", 4},
                 {"wrong", Json::array({Wrong(1)})},
                 {"wrong_total", 40},
                 {"wrong_sizes", {{"all_reduce", {8, 1024}}}},
                 {"wrong_ranks", Json::array({{{"rank", 1}, {"family", "hopper"}, {"node", 0}}})}};
  EXPECT_TRUE(CheckCollectiveResult(result, 4).ok());
}

// A store entry another client wrote, with "rank": "1", once crashed hetrun (nlohmann type_error).
TEST(CollectiveResultTest, ARankThatIsAStringIsAnErrorNamingTheField) {
  Json result = {{"wrong", Json::array({Wrong(1), Wrong("1")})}};
  Status checked = CheckCollectiveResult(result, 4);
  EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(checked.message(), "wrong[1].rank is not an integer");
}

TEST(CollectiveResultTest, EveryFieldIsChecked) {
  auto message = [](Json result) { return CheckCollectiveResult(result, 4).message(); };
  EXPECT_EQ(message(Json::array()), "the result is not a JSON object");
  EXPECT_EQ(message({{"wrong", "x"}}), "wrong is not a list");
  EXPECT_EQ(message({{"wrong", Json::array({Wrong(7)})}}),
            "wrong[0].rank 7 is not a rank of the job (world size 4)");
  Json bad_op = Wrong(1);
  bad_op["op"] = "broadcast";
  EXPECT_EQ(message({{"wrong", Json::array({bad_op})}}),
            "wrong[0].op is not all_reduce or all_gather");
  Json bad_got = Wrong(1);
  bad_got["got"] = "3";
  EXPECT_EQ(message({{"wrong", Json::array({bad_got})}}), "wrong[0].got is not a number");
  EXPECT_EQ(message({{"wrong", Json::array()},
                     {"wrong_ranks", Json::array({{{"rank", 0}, {"node", "0"}}})}}),
            "wrong_ranks[0].node is not an integer");
  EXPECT_EQ(message({{"wrong", Json::array()}, {"wrong_sizes", {{"all_gather", {"8"}}}}}),
            "wrong_sizes.all_gather holds a size that is not an integer");
  EXPECT_EQ(message({{"error", 5}}), "result.error is not a string");
  EXPECT_EQ(message({{"cannot_run", Json::array()}}), "result.cannot_run is not a string");
  EXPECT_EQ(message({{"bandwidth", {{"stages", Json::array({{{"stage", "0"}}})}}}}),
            "bandwidth.stages[0].stage is not an integer");
  EXPECT_EQ(message({{"bandwidth", {{"boundaries", Json::array({{{"p2p_gb_per_s", "fast"}}})}}}}),
            "bandwidth.boundaries[0].p2p_gb_per_s is not a number");
  EXPECT_EQ(message({{"fragment", "x"}}), "result.fragment is not an object");
}

// 128 ranks, one corrupting GPU: every rank's 42 wrong values made a 1.08 MB file, over the old
// fixed 1 MiB; the probe now summarises, and the bound still allows the whole list for the size.
TEST(CollectiveResultTest, TheBoundGrowsWithTheJob) {
  EXPECT_EQ(CollectiveResultLimit(2), size_t{256 * 1024 + 2 * 1024});
  EXPECT_GT(CollectiveResultLimit(128), size_t{128} * 1024);
  EXPECT_GT(CollectiveResultLimit(4096), size_t{4} << 20);
}

}  // namespace
}  // namespace hetrun::launcher

#include "supervise/cpu_binding.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace hetrun::launcher {
namespace {

using Cpus = std::vector<std::vector<int>>;

TEST(CpuBindingTest, ParsesNoneAndSpreadAndNamesAnythingElse) {
  EXPECT_EQ(ParseCpuBind("none").value(), CpuBind::kNone);
  EXPECT_EQ(ParseCpuBind("spread").value(), CpuBind::kSpread);
  Result<CpuBind> bad = ParseCpuBind("cores");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'cores'"), std::string::npos);
}

TEST(CpuBindingTest, FewerCpusThanRanksDealsOneCpuEachInTurn) {
  // 6 workers on 2 CPUs: every CPU carries ranks 0,2,4 or 1,3,5 (the demo's mix per core).
  EXPECT_EQ(SpreadCpus({0, 1}, 6), (Cpus{{0}, {1}, {0}, {1}, {0}, {1}}));
  EXPECT_EQ(SpreadCpus({4, 9, 11}, 4), (Cpus{{4}, {9}, {11}, {4}}));
}

TEST(CpuBindingTest, MoreCpusThanRanksGivesContiguousBlocksLargerFirst) {
  EXPECT_EQ(SpreadCpus({0, 1, 2, 3, 4, 5, 6, 7}, 2), (Cpus{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(SpreadCpus({0, 1, 2, 3, 4, 5, 6}, 3), (Cpus{{0, 1, 2}, {3, 4}, {5, 6}}));
  EXPECT_EQ(SpreadCpus({2, 3, 8}, 3), (Cpus{{2}, {3}, {8}}));
}

TEST(CpuBindingTest, EveryAllowedCpuIsUsedAndNoneTwiceWhenCpusSuffice) {
  std::vector<int> cpus;
  for (int c = 0; c < 37; ++c) cpus.push_back(c * 2);
  for (int ranks = 1; ranks <= 37; ++ranks) {
    std::vector<int> seen;
    for (const std::vector<int>& block : SpreadCpus(cpus, ranks)) {
      ASSERT_FALSE(block.empty()) << ranks;
      seen.insert(seen.end(), block.begin(), block.end());
    }
    EXPECT_EQ(seen, cpus) << ranks;
  }
}

TEST(CpuBindingTest, DegenerateInputsBindNothing) {
  EXPECT_TRUE(SpreadCpus({0, 1}, 0).empty());
  EXPECT_EQ(SpreadCpus({}, 2), (Cpus{{}, {}}));
}

TEST(CpuBindingTest, CpuListsUseRangesLikeProcStatus) {
  EXPECT_EQ(CpuListText({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(CpuListText({5}), "5");
  EXPECT_EQ(CpuListText({}), "");
}

TEST(CpuBindingTest, AllowedCpusIsTheProcessMask) {
  Result<std::vector<int>> cpus = AllowedCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status().ToString();
  ASSERT_FALSE(cpus->empty());
  EXPECT_TRUE(std::is_sorted(cpus->begin(), cpus->end()));
}

}  // namespace
}  // namespace hetrun::launcher

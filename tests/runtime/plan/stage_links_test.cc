#include "hetrun/plan/stage_links.h"

#include <gtest/gtest.h>

namespace hetrun::plan {
namespace {

StageSlot Pod(int64_t gpus, const char* network, const char* nvlink) {
  StageSlot slot{"w", 0, "ampere", 1.0, 1e12, gpus};
  if (*network) slot.network = LinkByName(NetworkLinkTable(), network);
  if (*nvlink) slot.nvlink = LinkByName(NvlinkTable(), nvlink);
  return slot;
}

TEST(StageLinksTest, TablesGiveBandwidthPerDirection) {
  EXPECT_EQ(LinkByName(NetworkLinkTable(), "ib-200g").gb_per_s, 25.0);
  EXPECT_EQ(LinkByName(NetworkLinkTable(), "ib-400g").gb_per_s, 50.0);
  EXPECT_EQ(LinkByName(NetworkLinkTable(), "roce-100g").gb_per_s, 12.5);
  EXPECT_EQ(LinkByName(NetworkLinkTable(), "eth-25g").gb_per_s, 3.125);
  EXPECT_EQ(LinkByName(NvlinkTable(), "nvlink3").gb_per_s, 300.0);
  EXPECT_EQ(LinkByName(NvlinkTable(), "nvlink4").gb_per_s, 450.0);
  EXPECT_EQ(LinkByName(NvlinkTable(), "ib-200g").gb_per_s, 0.0);  // not an NVLink
  EXPECT_EQ(LinkFromNumber(37.5).name, "37.5 GB/s");
  EXPECT_NEAR(TransferMs(1e9, LinkFromNumber(25)), 40.0, 1e-12);
}

TEST(StageLinksTest, BoundaryTakesTheSlowerPodsNetwork) {
  EXPECT_EQ(BoundaryLink(Pod(8, "ib-400g", ""), Pod(8, "ib-200g", ""))->name, "ib-200g");
  EXPECT_EQ(BoundaryLink(Pod(8, "eth-25g", ""), Pod(8, "ib-400g", ""))->name, "eth-25g");
  EXPECT_EQ(BoundaryLink(Pod(8, "", ""), Pod(8, "ib-400g", ""))->name, "ib-400g");
  EXPECT_FALSE(BoundaryLink(Pod(8, "", "nvlink4"), Pod(8, "", "nvlink4")).has_value());
}

TEST(StageLinksTest, GroupsUseTheirPodsNvlinkAndTheJobTheSlowestNetwork) {
  CollectiveLinks links =
      SummariseLinks({Pod(8, "ib-200g", "nvlink3"), Pod(4, "ib-400g", "nvlink4"),
                      Pod(1, "ib-400g", "nvlink4"), Pod(2, "ib-200g", "")});
  ASSERT_EQ(links.groups.size(), 4u);
  EXPECT_EQ(links.groups[0].link->name, "nvlink3");
  EXPECT_EQ(links.groups[1].link->name, "nvlink4");
  EXPECT_EQ(links.groups[1].replicas, 4);
  EXPECT_FALSE(links.groups[2].link.has_value());  // one replica: no group
  EXPECT_FALSE(links.groups[3].link.has_value());  // nvlink not given
  EXPECT_EQ(links.slowest->name, "ib-200g");
  EXPECT_EQ(links.slowest_stage, 0);
  EXPECT_EQ(links.fastest->name, "ib-400g");
  EXPECT_TRUE(links.any_given);
  CollectiveLinks none = SummariseLinks({Pod(8, "", ""), Pod(8, "", "")});
  EXPECT_FALSE(none.any_given);
  EXPECT_FALSE(none.slowest.has_value());
}

}  // namespace
}  // namespace hetrun::plan

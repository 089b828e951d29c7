#include "hetrun/torch_info.h"

#include <gtest/gtest.h>

namespace hetrun {
namespace {

TEST(TorchInfoTest, LinksThePinnedLibtorch) {
  TorchInfo info = GetTorchInfo();
  EXPECT_EQ(info.version, "2.11.0");
  EXPECT_GE(info.device_count, 0);
  EXPECT_EQ(info.cuda_available, info.device_count > 0);
}

}  // namespace
}  // namespace hetrun

#include "supervise/measurement_gathering.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace hetrun::launcher {
namespace {

// Issue 28 item 12: one window the reader rejects made the merge skip the whole rank file.
TEST(MeasurementGatheringTest, ARankFileWithABadWindowKeepsItsOtherWindowsAndLogsTheDrop) {
  char dir[] = "/tmp/hetrun_gather_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string run_dir = dir;
  std::filesystem::create_directories(run_dir + "/measurements");
  std::ofstream(run_dir + "/measurements/rank_0.json")
      << R"({"num_layers": 4, "ranks": [{"rank": 0, "stage": 0, "windows": [
    {"window": 0, "first_layer": 0, "layers": 4, "forward_ms": 1, "backward_ms": 2},
    {"window": -1, "first_layer": 0, "layers": 4, "forward_ms": 1, "backward_ms": 2},
    {"window": 2, "first_layer": 0, "layers": 4, "forward_ms": 3, "backward_ms": 4}]}]})";
  std::ostringstream logged;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(logged)));
  std::optional<pipeline::Measurements> merged = MergeRankFiles(run_dir);
  spdlog::set_default_logger(previous);
  ASSERT_TRUE(merged.has_value()) << logged.str();
  ASSERT_EQ(merged->ranks.size(), 1u);
  EXPECT_EQ(merged->ranks[0].windows.size(), 2u);
  EXPECT_NE(logged.str().find("measurements: dropped a window: " + run_dir +
                              "/measurements/rank_0.json: $.ranks[0].windows[1].window"),
            std::string::npos)
      << logged.str();
  std::filesystem::remove_all(run_dir);
}

}  // namespace
}  // namespace hetrun::launcher

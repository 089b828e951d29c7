#include "metrics/pod_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hetrun/tuner/rank_metrics.h"
#include "hetrun/tuner/window_loop.h"
#include "metrics/prometheus_text.h"
#include "run_process.h"

namespace hetrun::launcher {
namespace {

TEST(PrometheusTextTest, LabelsAreEscapedAndSpecialValuesSpelledAsPrometheusReadsThem) {
  PrometheusText text;
  text.Family("m", "gauge", "a\\b\nc");
  text.Sample("m", {{"reason", "say \"hi\"\\\n"}}, 1.5);
  text.Sample("m", {}, std::nan(""));
  text.Sample("m", {}, -INFINITY);
  EXPECT_EQ(text.text(),
            "# HELP m a\\\\b\\nc\n# TYPE m gauge\nm{reason=\"say \\\"hi\\\"\\\\\\n\"} 1.5\nm "
            "NaN\nm -Inf\n");
}

TEST(PodMetricsTest, LauncherFiguresComeFromTheSupervisorsStatus) {
  SupervisionStatus status;
  status.workers = {{0, 0, true, 1.25}, {1, 1, false, -1}};
  status.restarts = 2;
  status.last_exit_code = 75;
  status.last_exit_reason = "rank 1 exited with 75";
  PodMetricsInput input;
  input.status = &status;
  input.nnodes = 2;
  input.nodes_joined = 2;
  input.rendezvous = true;
  input.memory_ceiling = 1024;
  std::string text = RenderPodMetrics(input);
  for (const char* line :
       {"hetrun_workers_running{node=\"0\"} 1\n", "hetrun_restarts_total{node=\"0\"} 2\n",
        "hetrun_last_exit_code{node=\"0\",reason=\"rank 1 exited with 75\"} 75\n",
        "hetrun_worker_heartbeat_age_seconds{node=\"0\",rank=\"0\",local_rank=\"0\"} 1.25\n",
        "hetrun_rendezvous_complete{node=\"0\"} 1\n",
        "hetrun_memory_ceiling_bytes{node=\"0\"} 1024\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  EXPECT_EQ(text.find("rank=\"1\",local_rank"), std::string::npos) << "no heartbeat, no age";
}

TEST(PodMetricsTest, RankFilesAreReadWithOnlyKnownNamesAndNumbers) {
  testing::TempDir dir;
  tuner::WindowReport report;
  report.window = 4;
  report.ranks.resize(1);
  report.ranks[0].step_ms = 200;
  report.ranks[0].wait_ms = 50;
  report.shares_used = {6};
  report.shares_next = {6};
  report.efficiency = 0.9;
  std::string good = tuner::RankMetricsText(report, 0, 1);
  dir.WriteFile("metrics/rank_3.prom", good + "evil_metric 1\nhetrun_tuner_efficiency x\n");
  dir.WriteFile("metrics/rank_4.prom", std::string(kMaxRankFileBytes + 1, '1'));
  SupervisionStatus status;
  status.workers = {{3, 0, true, -1}, {4, 1, true, -1}};
  PodMetricsInput input;
  input.status = &status;
  input.run_dir = dir.path();
  std::string text = RenderPodMetrics(input);
  EXPECT_NE(text.find("hetrun_tuner_windows_total{rank=\"3\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hetrun_rank_step_seconds{rank=\"3\"} 0.2\n"), std::string::npos);
  EXPECT_NE(text.find("hetrun_rank_barrier_idle_fraction{rank=\"3\"} 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("hetrun_rank_samples_per_second{rank=\"3\"} 30\n"), std::string::npos);
  EXPECT_NE(text.find("hetrun_tuner_efficiency{rank=\"3\"} 0.9"), std::string::npos);
  EXPECT_EQ(text.find("evil_metric"), std::string::npos);
  EXPECT_EQ(text.find("rank=\"4\""), std::string::npos) << "an oversized file is skipped";
}

TEST(RankMetricsWriterTest, WritesUnderTheRunFolderOnlyInsideHetrunRun) {
  testing::TempDir dir;
  EXPECT_FALSE(tuner::RankMetricsWriter::FromEnvironment(Environment{}, 0).enabled());
  tuner::RankMetricsWriter writer = tuner::RankMetricsWriter::FromEnvironment(
      Environment({{"HETRUN_RUN_DIR", dir.path()}, {"RANK", "5"}}), 0);
  ASSERT_TRUE(writer.enabled());
  EXPECT_EQ(writer.path(), dir.path() + "/metrics/rank_5.prom");
  ASSERT_TRUE(writer.Write("hetrun_tuner_windows_total 1\n").ok());
  std::ifstream in(writer.path());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "hetrun_tuner_windows_total 1");
  EXPECT_FALSE(std::filesystem::exists(writer.path() + ".tmp"));
}

}  // namespace
}  // namespace hetrun::launcher

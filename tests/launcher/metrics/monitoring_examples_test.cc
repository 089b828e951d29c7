// examples/monitoring/: the Grafana dashboard queries only metrics hetrun exposes and shows every
// one of them; the PodMonitor scrapes the port the emitted Volcano jobs declare.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "hetrun/tuner/rank_metrics.h"
#include "metrics/pod_metrics.h"
#include "yaml_json.h"

namespace hetrun::launcher {
namespace {

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(HETRUN_SOURCE_DIR) + "/examples/monitoring/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Every metric family name hetrun can expose.
std::set<std::string> ExposedNames() {
  SupervisionStatus status;
  status.workers = {{0, 0, true, 1.0}};
  PodMetricsInput input;
  input.status = &status;
  input.memory_ceiling = 1;
  std::set<std::string> names;
  std::istringstream lines(RenderPodMetrics(input));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) names.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  for (const tuner::RankMetricSpec& spec : tuner::kRankMetrics) names.insert(spec.name);
  return names;
}

TEST(MonitoringExamplesTest, GrafanaDashboardQueriesExactlyTheExposedMetrics) {
  nlohmann::json dashboard = nlohmann::json::parse(ReadExample("grafana-dashboard.json"));
  std::set<std::string> queried;
  std::regex metric("hetrun_[a-z_]+");
  for (const auto& panel : dashboard.at("panels")) {
    for (const auto& target : panel.at("targets")) {
      std::string expr = target.at("expr");
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
        queried.insert(it->str());
      }
    }
  }
  std::set<std::string> exposed = ExposedNames();
  for (const std::string& name : queried) EXPECT_TRUE(exposed.contains(name)) << name;
  for (const std::string& name : exposed) {
    if (name == "hetrun_workers") continue;  // the namespace variable's query uses it
    EXPECT_TRUE(queried.contains(name)) << name << " has no panel";
  }
}

TEST(MonitoringExamplesTest, PodMonitorScrapesTheJobsMetricsPort) {
  nlohmann::json monitor = testing::YamlToJson(ReadExample("podmonitor.yaml"));
  EXPECT_EQ(monitor["kind"], "PodMonitor");
  EXPECT_EQ(monitor["apiVersion"], "monitoring.coreos.com/v1");
  ASSERT_EQ(monitor["spec"]["podMetricsEndpoints"].size(), 1u);
  EXPECT_EQ(monitor["spec"]["podMetricsEndpoints"][0]["port"], "metrics");
  EXPECT_EQ(monitor["spec"]["podMetricsEndpoints"][0]["path"], "/metrics");
}

}  // namespace
}  // namespace hetrun::launcher

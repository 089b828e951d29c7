#include "metrics/pod_metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "hetrun/tuner/rank_metrics.h"
#include "metrics/prometheus_text.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {
namespace {

/// The file's bytes when it is a regular file of at most kMaxRankFileBytes.
std::optional<std::string> ReadSmallFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return std::nullopt;
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<size_t>(info.st_size) > kMaxRankFileBytes) {
    return std::nullopt;
  }
  std::string text(kMaxRankFileBytes, '\0');
  ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n < 0) return std::nullopt;
  text.resize(static_cast<size_t>(n));
  return text;
}

/// name -> value of one rank file, known names and finite numbers only.
std::map<std::string, double> ParseRankFile(const std::string& text) {
  std::map<std::string, double> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    std::string name = line.substr(0, space);
    bool known = false;
    for (const tuner::RankMetricSpec& spec : tuner::kRankMetrics) known |= name == spec.name;
    if (!known) continue;
    std::string number = line.substr(space + 1);
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) continue;
    values[name] = value;
  }
  return values;
}

// The `gpu_model` label of a local rank's samples, when its model is known.
void AddModel(const PodMetricsInput& input, int local_rank, Labels& labels) {
  if (local_rank < 0 || static_cast<size_t>(local_rank) >= input.local_gpu_models.size()) return;
  const std::string& model = input.local_gpu_models[static_cast<size_t>(local_rank)];
  if (!model.empty()) labels.emplace_back("gpu_model", model);
}

void LauncherFamilies(const PodMetricsInput& input, PrometheusText& out) {
  const SupervisionStatus empty;
  const SupervisionStatus& status = input.status ? *input.status : empty;
  const Labels node = {{"node", std::to_string(input.node_rank)}};
  int running = 0;
  for (const auto& worker : status.workers) running += worker.running ? 1 : 0;
  out.Family("hetrun_workers_running", "gauge", "Local workers running now");
  out.Sample("hetrun_workers_running", node, running);
  out.Family("hetrun_workers", "gauge", "Local workers of this node");
  out.Sample("hetrun_workers", node, static_cast<double>(status.workers.size()));
  out.Family("hetrun_restarts_total", "counter", "Restarts of the local group so far");
  out.Sample("hetrun_restarts_total", node, status.restarts);
  out.Family("hetrun_last_exit_code", "gauge",
             "Exit code of the last worker that failed (-1 = none), reason in the label");
  Labels last = node;
  last.push_back({"reason", status.last_exit_reason});
  out.Sample("hetrun_last_exit_code", last, status.last_exit_code.value_or(-1));
  out.Family("hetrun_worker_heartbeat_age_seconds", "gauge",
             "Seconds since each worker's last heartbeat (with --hang-timeout)");
  for (const auto& worker : status.workers) {
    if (worker.seconds_since_beat < 0) continue;
    Labels labels = {{"node", std::to_string(input.node_rank)},
                     {"rank", std::to_string(worker.rank)},
                     {"local_rank", std::to_string(worker.local_rank)}};
    AddModel(input, worker.local_rank, labels);
    out.Sample("hetrun_worker_heartbeat_age_seconds", labels, worker.seconds_since_beat);
  }
  out.Family("hetrun_rendezvous_complete", "gauge",
             "1 once every node met at the rendezvous (always 1 on a one-node job)");
  out.Sample("hetrun_rendezvous_complete", node, input.nodes_joined >= input.nnodes ? 1 : 0);
  out.Family("hetrun_rendezvous_nodes_joined", "gauge", "Nodes that joined the rendezvous");
  out.Sample("hetrun_rendezvous_nodes_joined", node, input.nodes_joined);
  out.Family("hetrun_nodes", "gauge", "Nodes of the job");
  out.Sample("hetrun_nodes", node, input.nnodes);
  if (input.memory_ceiling) {
    out.Family("hetrun_memory_ceiling_bytes", "gauge", "Job-wide GPU memory ceiling per rank");
    out.Sample("hetrun_memory_ceiling_bytes", node, static_cast<double>(*input.memory_ceiling));
  }
}

}  // namespace

std::string RenderPodMetrics(const PodMetricsInput& input) {
  PrometheusText out;
  LauncherFamilies(input, out);
  std::map<int, std::map<std::string, double>> ranks;
  std::map<int, int> local_of;
  if (input.status != nullptr && !input.run_dir.empty()) {
    for (const auto& worker : input.status->workers) {
      std::optional<std::string> text =
          ReadSmallFile(tuner::RankMetricsPath(input.run_dir, worker.rank));
      if (text) ranks[worker.rank] = ParseRankFile(*text);
      local_of[worker.rank] = worker.local_rank;
    }
  }
  for (const tuner::RankMetricSpec& spec : tuner::kRankMetrics) {
    bool any = false;
    for (const auto& [rank, values] : ranks) any |= values.contains(spec.name);
    if (!any) continue;
    out.Family(spec.name, spec.type, spec.help);
    for (const auto& [rank, values] : ranks) {
      auto it = values.find(spec.name);
      if (it == values.end()) continue;
      Labels labels = {{"rank", std::to_string(rank)}};
      AddModel(input, local_of.contains(rank) ? local_of[rank] : -1, labels);
      out.Sample(spec.name, labels, it->second);
    }
  }
  if (input.status != nullptr) {
    // The pod's count of fail-slow local ranks (docs/ARCHITECTURE.md §5.10); 0 before any window.
    double slow = 0;
    for (const auto& [rank, values] : ranks) {
      auto it = values.find("hetrun_rank_fail_slow");
      slow += it != values.end() && it->second > 0 ? 1 : 0;
    }
    out.Family("hetrun_fail_slow_ranks", "gauge", "Local ranks fail-slow now (K windows in a row)");
    out.Sample("hetrun_fail_slow_ranks", {{"node", std::to_string(input.node_rank)}}, slow);
  }
  return out.text();
}

}  // namespace hetrun::launcher

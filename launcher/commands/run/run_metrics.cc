#include "commands/run/run_metrics.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string>

#include "commands/setting.h"
#include "metrics/pod_metrics.h"

namespace hetrun::launcher {

Result<std::unique_ptr<MetricsServer>> StartMetrics(const cxxopts::ParseResult& parsed,
                                                    const Environment& env, const RunPlan& plan,
                                                    const PreflightResult& preflight,
                                                    const SupervisionStatus& status) {
  HETRUN_ASSIGN_OR_RETURN(std::optional<MetricsAddress> address,
                          Setting<std::optional<MetricsAddress>>(
                              parsed, "metrics-port", env, "HETRUN_METRICS_PORT", std::nullopt,
                              [](std::string_view text) -> Result<std::optional<MetricsAddress>> {
                                HETRUN_ASSIGN_OR_RETURN(MetricsAddress parsed_address,
                                                        ParseMetricsAddress(std::string(text)));
                                return std::optional<MetricsAddress>(parsed_address);
                              }));
  if (!address) return std::unique_ptr<MetricsServer>();
  auto render = [&plan, &preflight, &status] {
    PodMetricsInput input;
    input.status = &status;
    input.run_dir = plan.supervision.run_dir;
    input.nnodes = plan.topology.nnodes.value;
    input.node_rank = plan.topology.node_rank.value;
    input.rendezvous = preflight.rendezvous != nullptr;
    input.nodes_joined = input.rendezvous ? static_cast<int>(preflight.records.size()) : 1;
    if (plan.topology.per_process && input.rendezvous) input.nodes_joined = input.nnodes;
    if (preflight.ceiling) input.memory_ceiling = preflight.ceiling->bytes;
    if (plan.inventory) {
      for (const GpuInfo& gpu : plan.inventory->gpus) input.local_gpu_models.push_back(gpu.model);
    }
    return RenderPodMetrics(input);
  };
  HETRUN_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> server,
                          MetricsServer::Listen(*address, std::move(render)));
  spdlog::info("metrics on http://{}:{}/metrics", address->host, server->port());
  return server;
}

}  // namespace hetrun::launcher

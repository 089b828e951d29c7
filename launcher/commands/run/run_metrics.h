// `hetrun run --metrics-port`: the pod's /metrics endpoint (launcher/metrics/), bound before the
// preflight and served from the supervisor's loop.
#pragma once

#include <cxxopts.hpp>
#include <memory>

#include "commands/run/run_plan.h"
#include "hetrun/base/env.h"
#include "metrics/metrics_server.h"
#include "preflight/preflight.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {

/// --metrics-port / HETRUN_METRICS_PORT: the endpoint, bound before the preflight so a taken
/// port fails before any rendezvous; served by the supervisor's loop. Null when off.
Result<std::unique_ptr<MetricsServer>> StartMetrics(const cxxopts::ParseResult& parsed,
                                                    const Environment& env, const RunPlan& plan,
                                                    const PreflightResult& preflight,
                                                    const SupervisionStatus& status);

}  // namespace hetrun::launcher

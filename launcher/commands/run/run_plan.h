// Everything `hetrun run` reads before the preflight (docs/ARCHITECTURE.md §2.1): the topology, the
// declared GPUs, the supervision settings, the CPU binding, the pod's pipeline stage, the
// pipeline inputs (commands/run/pipeline_inputs.h) and the collective check's settings, each
// checked before the preflight, which may join the other nodes.
#pragma once

#include <cxxopts.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/job/inventory.h"
#include "hetrun/job/topology.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/plan/torchtitan_args.h"
#include "preflight/collective/collective_check.h"
#include "preflight/preflight.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {

/// Everything `hetrun run` reads before the preflight.
struct RunPlan {
  SupervisorOptions supervision;
  Topology topology;
  size_t local_workers = 1;
  std::optional<Inventory> inventory;
  std::vector<std::string> nvml_families;  ///< without an inventory: for HETRUN_GPU_FAMILY
  std::vector<std::string> nvml_models;    ///< without an inventory: for HETRUN_GPU_MODEL
  PreflightOptions preflight;
  std::vector<std::vector<int>> worker_cpus;
  std::map<std::string, std::string> stage_vars;
  std::string run_id;
  std::optional<pipeline::JobLayout> layout;  ///< --plan: the pipeline's layout
  plan::TorchtitanNames torchtitan_names;     ///< --torchtitan-names: of HETRUN_TORCHTITAN_ARGS
  int64_t model_layers = 0;                   ///< --model-layers: the layout's count, 0 = any
  std::string role;
  std::string signals_to_handle;
  std::string measurements_out;  ///< --measurements-out: where the merged measurements go
  bool agent_store = false;      ///< one node: the workers use the store hetrun hosts
  CollectiveCheckOptions collective_check;  ///< --check-collectives
};

/// --measurements-out FILE: a file path whose folder exists (checked before the run, not at its
/// end).
Result<std::string> ParseMeasurementsOut(std::string_view text);

/// Reads the options and the environment into a RunPlan; `command` is the workers' argv.
Result<RunPlan> ReadRunPlan(const cxxopts::ParseResult& parsed, const Environment& env,
                            const std::vector<std::string>& command);

}  // namespace hetrun::launcher

// Gathers what ResolveTopology reads on a real machine: the environment, the topology flags, the
// host name, the Volcano host files and (for --nproc-per-node auto) the local GPU count. Shared
// by `hetrun env` and `hetrun run`, which take the same topology flags.
#pragma once

#include <cxxopts.hpp>
#include <map>
#include <string>
#include <string_view>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "hetrun/job/topology.h"

namespace hetrun::launcher {

/// The topology flags as given (unset when absent) and --fake-gpus ("" when absent).
struct TopologyOptionValues {
  TopologyFlags flags;
  std::string fake_gpus;
};

/// Adds --nnodes --node-rank --nproc-per-node --master-addr --master-port --fake-gpus.
void AddTopologyOptions(cxxopts::Options& options);

/// Reads back what AddTopologyOptions declared.
TopologyOptionValues ReadTopologyOptions(const cxxopts::ParseResult& parsed);

/// Every <dir>/*.host file keyed by its name without ".host". A missing `dir` is an empty map
/// when `must_exist` is false (the default /etc/volcano outside Volcano); an unreadable or
/// oversized file is an error naming it.
Result<std::map<std::string, std::string>> ReadVolcanoHostFiles(const std::string& dir,
                                                                bool must_exist);

/// TopologyInputs for this machine. The GPU inventory is read only when workers per node is
/// auto (NeedsLocalGpuCount): `fake_gpus` (--fake-gpus), else HETRUN_FAKE_GPUS, else the probe.
Result<TopologyInputs> GatherTopologyInputs(const Environment& env, const TopologyFlags& flags,
                                            std::string_view fake_gpus);

}  // namespace hetrun::launcher

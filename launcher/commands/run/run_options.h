// hetrun run's option table (docs/reference/cli.md): its groups (topology, supervision,
// torchrun, preflight, health) as cxxopts declares them and --help prints them, and the long
// names the torchrun translation knows (commands/torchrun_args.h).
#pragma once

#include <cxxopts.hpp>
#include <vector>

#include "commands/torchrun_args.h"

namespace hetrun::launcher {

/// Every option of hetrun run, in its groups.
cxxopts::Options RunOptions();

/// The long options of `options` and whether each takes a value.
std::vector<KnownOption> KnownRunOptions(const cxxopts::Options& options);

}  // namespace hetrun::launcher

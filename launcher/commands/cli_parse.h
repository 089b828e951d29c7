// cxxopts glue shared by the subcommands: parse without exceptions escaping.
#pragma once

#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// Parses `args` with `options`; a cxxopts error becomes a usage error naming the bad option.
/// Arguments after a lone "--" are left for the caller in `*rest` (when not null).
Result<cxxopts::ParseResult> ParseSubcommandOptions(cxxopts::Options& options,
                                                    const std::vector<std::string>& args,
                                                    std::vector<std::string>* rest = nullptr);

}  // namespace hetrun::launcher

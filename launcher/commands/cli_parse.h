// cxxopts glue shared by the subcommands: parse without exceptions escaping.
#pragma once

#include <cxxopts.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// Parses `args` with `options`; a cxxopts error becomes a usage error naming the bad option.
/// Arguments after a lone "--" are left for the caller in `*rest` (when not null).
Result<cxxopts::ParseResult> ParseSubcommandOptions(cxxopts::Options& options,
                                                    const std::vector<std::string>& args,
                                                    std::vector<std::string>* rest = nullptr);

/// The prologue of a subcommand that takes options and no positional argument: parses `args`;
/// with --help prints `help` (the options' help by default) to `out` and returns no result (the
/// command then exits 0); a positional argument is a usage error naming it.
Result<std::optional<cxxopts::ParseResult>> ParseOptionsOnly(
    cxxopts::Options& options, const std::vector<std::string>& args, std::ostream& out,
    const std::vector<std::string>& help_groups = {});

}  // namespace hetrun::launcher

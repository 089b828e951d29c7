// Test support: the example trainer's --summary file (key=value lines) as a map.
#pragma once

#include <map>
#include <string>

namespace hetrun::testing {

/// Every `key=value` line of `path` (the value is what follows the first '='); empty when the
/// file cannot be read.
std::map<std::string, std::string> ReadSummary(const std::string& path);

}  // namespace hetrun::testing

// A misspelled setting is not ignored without a word: every HETRUN_* variable of the environment
// that the table (runtime/base/env_vars.def) does not declare is named, with the closest declared
// name (docs/ARCHITECTURE.md §4.1).
#pragma once

#include <string>
#include <vector>

#include "hetrun/base/env.h"

namespace hetrun {

/// One message per set HETRUN_* variable the table does not declare, sorted by name:
/// "HETRUN_FAKE_GPU is not a hetrun variable (did you mean HETRUN_FAKE_GPUS?); it is ignored".
std::vector<std::string> UnknownHetrunVariables(const Environment& env);

}  // namespace hetrun

#include "hetrun/base/unknown_env_vars.h"

#include <algorithm>

#include "hetrun/base/nearest_name.h"
#include "hetrun/base/shown_text.h"

namespace hetrun {
namespace {

constexpr std::string_view kPrefix = "HETRUN_";

/// Every declared name that starts with HETRUN_ (settings, and what hetrun writes for workers).
std::vector<std::string> DeclaredHetrunNames() {
  std::vector<std::string> names;
  for (const EnvVarSpec& spec : EnvVarTable()) {
    if (spec.name.substr(0, kPrefix.size()) == kPrefix) names.emplace_back(spec.name);
  }
  return names;
}

}  // namespace

std::vector<std::string> UnknownHetrunVariables(const Environment& env) {
  const std::vector<std::string> known = DeclaredHetrunNames();
  std::vector<std::string> messages;
  for (const std::string& name : env.NamesWithPrefix(kPrefix)) {
    if (FindEnvVarSpec(name) != nullptr) continue;
    // At least 2 edits, a third of the part after HETRUN_ for long names: HETRUN_FAKE_GPU and
    // HETRUN_TERMINATION_LOGS are one edit away; a name of another tool is usually further.
    const size_t reach = std::max<size_t>(2, (name.size() - kPrefix.size()) / 3);
    const std::string nearest = NearestName(name, known, reach);
    messages.push_back(ShownText(name, 64) + " is not a hetrun variable" +
                       (nearest.empty() ? std::string(" (hetrun vars lists them)")
                                        : " (did you mean " + nearest + "?)") +
                       "; it is ignored");
  }
  return messages;
}

}  // namespace hetrun

#include "hetrun/plan/k8s_target.h"

#include <charconv>

namespace hetrun::plan {

bool K8sTarget::ContainerRules() const {
  return minor >= kContainerRulesOnMinor ||
         (minor >= kContainerRulesGateMinor && container_rules_gate);
}

bool K8sTarget::RestartAll() const {
  return ContainerRules() &&
         (minor >= kRestartAllOnMinor || (minor >= kRestartAllGateMinor && restart_all_gate));
}

std::string K8sTarget::Describe() const {
  std::string text = "1." + std::to_string(minor);
  if (container_rules_gate) text += std::string(" with ") + kContainerRulesGate + "=true";
  if (restart_all_gate) text += std::string(" with ") + kRestartAllGate + "=true";
  return text;
}

namespace {

Result<int> ParseMinor(std::string_view version) {
  int minor = -1;
  const bool shape = version.starts_with("1.") && version.size() > 2;
  const char* first = version.data() + 2;
  const char* last = version.data() + version.size();
  if (!shape || std::from_chars(first, last, minor).ptr != last || minor < kK8sMinMinor ||
      minor > kK8sMaxMinor) {
    return UsageError("--k8s-version '" + std::string(version) + "': 1." +
                      std::to_string(kK8sMinMinor) + " to 1." + std::to_string(kK8sMaxMinor) +
                      " (X.Y)");
  }
  return minor;
}

// One NAME=true of --feature-gates onto `target`; the gate must be alpha (off) in its version.
Status ApplyGate(std::string_view entry, K8sTarget* target) {
  const std::string version = "--k8s-version 1." + std::to_string(target->minor);
  std::string_view name = entry.substr(0, entry.find('='));
  if (entry.size() <= name.size() || entry.substr(name.size()) != "=true") {
    return UsageError("--feature-gates '" + std::string(entry) + "': NAME=true");
  }
  int alpha = 0;
  int on = 0;
  if (name == kContainerRulesGate) {
    alpha = kContainerRulesGateMinor;
    on = kContainerRulesOnMinor;
    target->container_rules_gate = true;
  } else if (name == kRestartAllGate) {
    alpha = kRestartAllGateMinor;
    on = kRestartAllOnMinor;
    target->restart_all_gate = true;
  } else {
    return UsageError("--feature-gates: unknown gate '" + std::string(name) + "' (" +
                      kContainerRulesGate + ", " + kRestartAllGate + ")");
  }
  if (target->minor < alpha) {
    return UsageError("--feature-gates " + std::string(name) + "=true: " + version +
                      " has no such gate (alpha from 1." + std::to_string(alpha) + ")");
  }
  if (target->minor >= on) {
    return UsageError("--feature-gates " + std::string(name) + "=true: on by default in " +
                      version + " already (drop the flag)");
  }
  return Status::Ok();
}

}  // namespace

Result<K8sTarget> ParseK8sTarget(std::string_view version, std::string_view gates,
                                 std::string_view restart, std::string_view emit) {
  K8sTarget target;
  if (!version.empty()) {
    HETRUN_ASSIGN_OR_RETURN(target.minor, ParseMinor(version));
  }
  while (!gates.empty()) {
    const size_t comma = gates.find(',');
    HETRUN_RETURN_IF_ERROR(ApplyGate(gates.substr(0, comma), &target));
    gates = comma == std::string_view::npos ? std::string_view() : gates.substr(comma + 1);
  }
  if (!restart.empty() && restart != "recreate" && restart != "in-place") {
    return UsageError("--restart '" + std::string(restart) + "': recreate or in-place");
  }
  target.in_place = restart == "in-place";
  if (target.in_place && emit != "jobset") {
    return UsageError(
        "--restart in-place is JobSet's InPlaceRestart and goes with --emit jobset, not --emit " +
        std::string(emit) +
        " (Volcano restarts a job by recreating its pods; from --k8s-version "
        "1.35 its containers restart in place on exit 75 without the flag)");
  }
  if (target.in_place && !target.RestartAll()) {
    return UsageError(
        "--restart in-place needs restart rules with RestartAllContainers "
        "(KEP-5532): --k8s-version 1.36, or 1.35 with --feature-gates " +
        std::string(kRestartAllGate) + "=true; --k8s-version " + target.Describe() + " has not");
  }
  return target;
}

}  // namespace hetrun::plan

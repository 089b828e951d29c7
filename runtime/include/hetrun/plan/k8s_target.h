// The Kubernetes version (and feature gates) the manifests of `hetrun plan --emit volcano|jobset`
// target: `--k8s-version X.Y`, `--feature-gates NAME=true,...`, `--restart recreate|in-place`.
// From it follow the container restart rules (hetrun/plan/restart_rules.h) and what a version
// refuses (docs/ARCHITECTURE.md §4.3).
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun::plan {

/// The oldest version hetrun emits for: Job podFailurePolicy (the JobSet's exit-code mapping,
/// KEP-3329) is stable from 1.31. Also the default: the emitted fields then need nothing newer.
inline constexpr int kK8sMinMinor = 31;
/// The newest version whose behaviour hetrun knows (KEP-5532 goes stable in 1.37).
inline constexpr int kK8sMaxMinor = 37;

/// KEP-5307 ContainerRestartRules: alpha (gate off) 1.34, beta (on) 1.35, stable 1.36.
inline constexpr int kContainerRulesGateMinor = 34;
inline constexpr int kContainerRulesOnMinor = 35;
/// KEP-5532 RestartAllContainersOnContainerExits: alpha (gate off) 1.35, beta (on) 1.36.
inline constexpr int kRestartAllGateMinor = 35;
inline constexpr int kRestartAllOnMinor = 36;

inline constexpr const char* kContainerRulesGate = "ContainerRestartRules";
inline constexpr const char* kRestartAllGate = "RestartAllContainersOnContainerExits";

struct K8sTarget {
  int minor = kK8sMinMinor;           ///< 1.<minor>
  bool container_rules_gate = false;  ///< --feature-gates ContainerRestartRules=true
  bool restart_all_gate = false;      ///< --feature-gates RestartAllContainersOnContainerExits=true
  bool in_place = false;              ///< --restart in-place (JobSet InPlaceRestart)

  /// Containers may carry restartPolicy and restartPolicyRules (KEP-5307).
  bool ContainerRules() const;
  /// restartPolicyRules may use the action RestartAllContainers (KEP-5532).
  bool RestartAll() const;
  /// "1.35", "1.35 with RestartAllContainersOnContainerExits=true".
  std::string Describe() const;
};

/// Parses --k8s-version ("1.35"), --feature-gates ("A=true,B=true"; empty: none) and --restart
/// ("recreate", "in-place"; empty: recreate) for `emit` ("volcano", "jobset"). Usage errors name
/// the flag and the version: a version outside 1.31-1.37, an unknown gate, a gate the version
/// does not have (before its alpha) or has on already, --restart in-place with volcano or with a
/// version without RestartAllContainers.
Result<K8sTarget> ParseK8sTarget(std::string_view version, std::string_view gates,
                                 std::string_view restart, std::string_view emit);

}  // namespace hetrun::plan

// What restarts where, by Kubernetes version: the trainer container's restartPolicyRules
// (KEP-5307, KEP-5532) that `hetrun plan --emit volcano|jobset` writes for a K8sTarget, and the
// table of each exit code's fate per version and scheduler (`hetrun exit-codes --restarts`,
// docs/reference/exit-codes.md; docs/ARCHITECTURE.md §4.3).
//
// A container restarts in place (kubelet, same pod, node, images and scheduling) only on the
// exit-code table's transient code, 75: a peer was lost or a rendezvous timed out, and starting
// again where it is meets the others again. Never on the permanent codes (78, 80, 84, ...: a
// restart would fail the same way), and not on 83 (fail-slow: the job must leave that GPU) or 143
// (SIGTERM: the pod is being deleted or preempted, and the kubelet restarts no container of a
// terminating pod): those stay with the scheduler's job-level policy.
#pragma once

#include <string>
#include <vector>

#include "hetrun/plan/k8s_target.h"

namespace hetrun::plan {

/// One rule of a container's restartPolicyRules (operator In).
struct ContainerRestartRule {
  std::string action;  ///< "Restart" or "RestartAllContainers"
  std::vector<int> codes;
};

/// hetrun's codes a container restarts in place on: {75}.
std::vector<int> InPlaceRestartCodes();

/// The trainer container's rules for `target`: none before ContainerRules(); Restart on
/// InPlaceRestartCodes(); RestartAllContainers instead under --restart in-place (the whole pod
/// starts again, init containers and sidecars included).
std::vector<ContainerRestartRule> ContainerRestartRules(const K8sTarget& target);

/// The exit-code table with each row's fate under Volcano and JobSet before 1.35, from 1.35 on,
/// and under JobSet --restart in-place (`hetrun exit-codes --restarts --markdown`).
std::string RestartTableMarkdown();

}  // namespace hetrun::plan

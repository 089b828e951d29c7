#include "hetrun/plan/restart_rules.h"

#include <algorithm>

#include "hetrun/base/exit_code.h"
#include "hetrun/plan/pod_failure_policy.h"

namespace hetrun::plan {

std::vector<int> InPlaceRestartCodes() {
  return {kExitTransient};
}

std::vector<ContainerRestartRule> ContainerRestartRules(const K8sTarget& target) {
  if (!target.ContainerRules()) return {};
  return {{target.in_place ? "RestartAllContainers" : "Restart", InPlaceRestartCodes()}};
}

namespace {

using Kind = ExitCodeRow::Kind;

// The podFailurePolicy action of a code ("Count", "FailJob"), or "" when no rule names it.
std::string JobAction(int code) {
  for (const PodFailureRule& rule : PodFailureRules()) {
    if (std::find(rule.codes.begin(), rule.codes.end(), code) != rule.codes.end()) {
      return rule.action;
    }
  }
  return "";
}

struct Fates {
  std::string volcano;
  std::string jobset;
  std::string from_135;
  std::string in_place;
};

Fates RowFates(const ExitCodeRow& row) {
  if (row.kind == Kind::kCode && row.code == 0) {
    return {"CompleteJob", "the Job completes", "same", "same"};
  }
  Fates fates;
  fates.volcano = row.IsPolicy() ? std::string(row.action) : "AbortJob (PodFailed catch-all)";
  std::string action;
  if (row.kind == Kind::kCode) action = JobAction(row.code);
  if (row.kind == Kind::kRange && row.cell == "1-63") action = "FailJob";
  if (row.kind == Kind::kEvent && row.cell == "PodEvicted") action = "Count";
  fates.jobset = action == "FailJob" ? "FailJob: FailJobSet"
                 : action == "Count" ? "Count: RestartJobSet (every Job recreated)"
                                     : "no rule: counts, RestartJobSet";
  const auto codes = InPlaceRestartCodes();
  const bool in_place =
      row.kind == Kind::kCode && std::find(codes.begin(), codes.end(), row.code) != codes.end();
  fates.from_135 = in_place ? "Restart: the container restarts in place, pod kept" : "same";
  fates.in_place = in_place ? "RestartAllContainers: the pod restarts in place"
                   : action == "FailJob"
                       ? "FailJob: FailJobSet"
                       : "the Job replaces this pod (podReplacementPolicy Failed); the others "
                         "restart in place";
  return fates;
}

}  // namespace

std::string RestartTableMarkdown() {
  std::string text =
      "| code | Volcano, Kubernetes 1.31-1.34 | JobSet, 1.31-1.34 | either, from 1.35 "
      "(ContainerRestartRules) | JobSet --restart in-place (1.36; 1.35 with the gate) |\n"
      "|---|---|---|---|---|\n";
  for (const ExitCodeRow& row : ExitCodeTable()) {
    const Fates fates = RowFates(row);
    text += "| " + std::string(row.cell) + " | " + fates.volcano + " | " + fates.jobset + " | " +
            fates.from_135 + " | " + fates.in_place + " |\n";
  }
  return text;
}

}  // namespace hetrun::plan

#include "hetrun/plan/jobset.h"

#include <cstdio>

#include "hetrun/plan/pod_failure_policy.h"
#include "plan/pod_template.h"
#include "plan/yaml_writer.h"

namespace hetrun::plan {
namespace {

using internal::EnvVar;
using internal::Json;

Json LabelVar(const std::string& name, const std::string& label) {
  return {{"name", name},
          {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['" + label + "']"}}}}}};
}

// What hetrun reads under JobSet (docs/ARCHITECTURE.md §4.1): the JobSet's name (node 0's DNS
// name), this pod's Job index and global index, the restart attempt (the incarnation), and the
// Jobs of every task in HETRUN_TASK_ORDER's order.
void AddJobSetEnv(const std::vector<internal::TaskPods>& tasks, Json& env) {
  std::vector<std::string> replicas;
  for (const internal::TaskPods& pods : tasks) replicas.push_back(std::to_string(pods.replicas));
  env.push_back(LabelVar("HETRUN_JOBSET_NAME", kJobSetNameLabel));
  env.push_back(LabelVar("HETRUN_JOBSET_JOB_INDEX", kJobSetJobIndexLabel));
  env.push_back(LabelVar("HETRUN_JOBSET_GLOBAL_INDEX", kJobSetGlobalIndexLabel));
  env.push_back(LabelVar("HETRUN_JOBSET_RESTART_ATTEMPT", kJobSetRestartAttemptLabel));
  env.push_back(EnvVar("HETRUN_JOBSET_REPLICAS", internal::Join(replicas)));
}

Json PodFailurePolicy() {
  Json rules = Json::array();
  for (const PodFailureRule& rule : PodFailureRules()) {
    if (!rule.pod_condition.empty()) {
      rules.push_back(
          {{"action", rule.action},
           {"onPodConditions", Json::array({{{"type", rule.pod_condition}, {"status", "True"}}})}});
    } else {
      rules.push_back(
          {{"action", rule.action},
           {"onExitCodes",
            {{"containerName", "trainer"}, {"operator", "In"}, {"values", rule.codes}}}});
    }
  }
  return {{"rules", std::move(rules)}};
}

// Under InPlaceRestart a Job must not fail on a pod it can replace (KEP-467's webhook
// requirements): backoffLimit MaxInt32, and a replacement only once the old pod has failed.
inline constexpr int64_t kInPlaceBackoffLimit = 2147483647;

// One Job per stage: one pod, Indexed (JOB_COMPLETION_INDEX 0), no retries inside the Job (the
// JobSet restarts as a whole or fails), unless --restart in-place.
Json JobTemplate(Json pod_template, bool in_place) {
  Json spec = {{"parallelism", 1},
               {"completions", 1},
               {"completionMode", "Indexed"},
               {"backoffLimit", in_place ? kInPlaceBackoffLimit : 0}};
  if (in_place) spec["podReplacementPolicy"] = "Failed";
  spec["podFailurePolicy"] = PodFailurePolicy();
  spec["template"] = std::move(pod_template);
  return {{"spec", std::move(spec)}};
}

// A Job failed by its podFailurePolicy (FailJob) fails the JobSet; every other failure
// (BackoffLimitExceeded after a Count) restarts it. JobSet restarts by default, so the fail rule
// is explicit.
Json FailurePolicy(bool in_place) {
  Json policy = {{"maxRestarts", internal::kMaxJobRestarts}};
  if (in_place) policy["restartStrategy"] = "InPlaceRestart";
  policy["rules"] =
      Json::array({{{"name", "FailOnHetrunVerdict"},
                    {"action", "FailJobSet"},
                    {"onJobFailureReasons", Json::array({"PodFailurePolicy"})}},
                   {{"name", "RestartOnAnyOtherFailure"}, {"action", "RestartJobSet"}}});
  return policy;
}

// "1-64,70,78": ascending codes with their runs contracted.
std::string CodeRuns(const std::vector<int>& codes) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < codes.size();) {
    size_t j = i;
    while (j + 1 < codes.size() && codes[j + 1] == codes[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(codes[i])
                          : std::to_string(codes[i]) + "-" + std::to_string(codes[j]));
    i = j + 1;
  }
  return internal::Join(runs);
}

std::string ExitCodeHeader(bool in_place) {
  std::string text = std::string(
                         "Exit codes (`hetrun exit-codes`) through each Job's "
                         "podFailurePolicy (backoffLimit ") +
                     (in_place ? "2147483647" : "0") + "):\n";
  for (const PodFailureRule& rule : PodFailureRules()) {
    std::string what =
        rule.pod_condition.empty() ? "exit " + CodeRuns(rule.codes) : rule.pod_condition;
    char line[256];
    std::snprintf(line, sizeof line, "  %-30s -> %-8s %s\n", what.c_str(), rule.action.c_str(),
                  rule.why.c_str());
    text += line;
  }
  text += in_place
              ? "Count: the Job replaces the pod and the JobSet restarts the others in "
                "place, at most " +
                    std::to_string(internal::kMaxJobRestarts) + " times;\n"
              : "Count fails the Job (BackoffLimitExceeded) and the JobSet restarts, at most " +
                    std::to_string(internal::kMaxJobRestarts) + " times;\n";
  text +=
      "FailJob fails it as PodFailurePolicy and the JobSet fails. Any other code "
      "(128+N: a signal)\ncounts, too (Volcano's PodFailed catch-all aborts instead).\n";
  return text;
}

std::string JobSetHeader(const PipelinePlan& plan, const ClusterSpec& cluster,
                         const std::string& first_task, const std::string& kueue_queue) {
  std::string header = "Heterogeneous pipeline JobSet written by `hetrun plan --emit jobset`.\n";
  header += internal::StageLines(plan);
  header +=
      "One replicated job per task, one pod per Job: the pod's jobset.sigs.k8s.io/"
      "job-global-index\nis its node rank, its job-index the entry of HETRUN_STAGE and "
      "HETRUN_STAGE_LAYERS it takes;\nnode 0 (network.enableDNSHostnames) is\n  " +
      cluster.job_name + "-" + first_task + "-0-0." + cluster.job_name + "\n";
  header += kueue_queue.empty()
                ? "No gang scheduling: JobSet starts each Job as its pods fit. Queue it in Kueue\n"
                  "(--kueue-queue) for all-or-nothing admission (waitForPodsReady).\n"
                : "Kueue admits it all-or-nothing in the LocalQueue " + kueue_queue +
                      " (apply the Kueue documents\nbelow once; enable waitForPodsReady in "
                      "Kueue's configuration for gang start).\n";
  if (cluster.k8s.in_place) {
    header +=
        "restartStrategy InPlaceRestart (KEP-467): a failed pod is replaced by its Job, the\n"
        "others restart in place; each in-place attempt counts against maxRestarts. Group\n"
        "restarts driven by JobSet need its in-place restart agent as a sidecar in each pod\n"
        "template (JobSet's docs).\n";
  }
  return header + ExitCodeHeader(cluster.k8s.in_place) + internal::RestartHeader(cluster) +
         internal::SecurityHeader(cluster);
}

}  // namespace

int64_t JobSetMaxRestarts() {
  return internal::kMaxJobRestarts;
}

std::string JobSetYaml(const PipelinePlan& plan, const ClusterSpec& cluster,
                       const std::string& kueue_queue) {
  std::vector<internal::TaskPods> tasks = internal::PlannedTasks(plan, cluster);
  const std::string first_task = tasks.front().task;
  Json replicated_jobs = Json::array();
  for (internal::TaskPods& pods : tasks) {
    Json env = pods.env;
    AddJobSetEnv(tasks, env);
    Json pod_spec = internal::PodSpec(cluster, "nodeSelector", {{cluster.label_key, pods.family}},
                                      std::move(env), pods.gpus);
    replicated_jobs.push_back({{"name", pods.task},
                               {"replicas", pods.replicas},
                               {"template", JobTemplate(internal::PodTemplate(std::move(pod_spec)),
                                                        cluster.k8s.in_place)}});
  }
  Json metadata = internal::Metadata(cluster);
  if (!kueue_queue.empty()) metadata["labels"][kKueueQueueLabel] = kueue_queue;
  Json jobset = {{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
                 {"kind", "JobSet"},
                 {"metadata", std::move(metadata)},
                 {"spec",
                  {{"network", {{"enableDNSHostnames", true}, {"publishNotReadyAddresses", true}}},
                   {"failurePolicy", FailurePolicy(cluster.k8s.in_place)},
                   {"replicatedJobs", std::move(replicated_jobs)}}}};
  return ToYaml(jobset, JobSetHeader(plan, cluster, first_task, kueue_queue)) + "---\n" +
         ToYaml(internal::NetworkPolicy(cluster, kJobSetNameLabel),
                internal::NetworkPolicyHeader());
}

}  // namespace hetrun::plan

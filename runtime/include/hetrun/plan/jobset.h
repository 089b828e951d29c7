// A pipeline plan as a Kubernetes JobSet (jobset.x-k8s.io/v1alpha2) for clusters without Volcano,
// with the exit-code table mapped through each Job's podFailurePolicy
// (hetrun/plan/pod_failure_policy.h) and the JobSet's failurePolicy; optionally queued in Kueue
// (hetrun/plan/kueue_queues.h). docs/how-to/jobset-kueue.md.
#pragma once

#include <string>

#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan {

/// Pod labels JobSet sets that hetrun reads through the downward API (docs/ARCHITECTURE.md
/// §4.1, the JobSet level).
inline constexpr const char* kJobSetNameLabel = "jobset.sigs.k8s.io/jobset-name";
inline constexpr const char* kJobSetJobIndexLabel = "jobset.sigs.k8s.io/job-index";
inline constexpr const char* kJobSetGlobalIndexLabel = "jobset.sigs.k8s.io/job-global-index";
inline constexpr const char* kJobSetRestartAttemptLabel = "jobset.sigs.k8s.io/restart-attempt";
/// The label that puts a workload in a Kueue LocalQueue.
inline constexpr const char* kKueueQueueLabel = "kueue.x-k8s.io/queue-name";

/// The JobSet of the plan, then the NetworkPolicy around its pods (YAML documents joined by
/// "---"). One replicated job per task of the cluster (replicas = its stages, in pipeline order,
/// so JobSet's job-global-index is the node rank), each Job one pod (Indexed, completions 1,
/// backoffLimit 0, the podFailurePolicy of the exit-code table), nodeSelector {label_key:
/// family}, the planned HETRUN_* variables plus the JobSet ones (HETRUN_JOBSET_*), the job
/// secret, the grace period, /dev/shm and the metrics port as in the Volcano Job.
/// failurePolicy: PodFailurePolicy -> FailJobSet, anything else -> RestartJobSet, at most
/// the Volcano Job's maxRetry restarts. DNS hostnames are on: node 0 is
/// <jobset>-<first task>-0-0.<jobset>. With `kueue_queue` non-empty the JobSet carries the
/// kueue.x-k8s.io/queue-name label.
std::string JobSetYaml(const PipelinePlan& plan, const ClusterSpec& cluster,
                       const std::string& kueue_queue);

/// The most restarts the JobSet makes (the Volcano Job's maxRetry).
int64_t JobSetMaxRestarts();

}  // namespace hetrun::plan

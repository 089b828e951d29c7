// What every scheduler object hetrun plan writes shares (Volcano Job, JobSet): the trainer
// container and its pod template, the hetrun variables of a planned stage task, the job secret,
// the grace period, the metrics port and the NetworkPolicy around the job's pods. Internal to
// plan/ (runtime/plan/volcano_job.cc, runtime/plan/jobset.cc).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan::internal {

using Json = nlohmann::ordered_json;

// hetrun's worst case after SIGTERM: the default grace period (30 s, Kubernetes' default
// terminationGracePeriodSeconds), node 0's final wait for the others (the default peer timeout,
// 15 s), and a margin. The pods get this period, and hetrun reads it back to check the sum.
inline constexpr int64_t kHetrunGraceSeconds = 30;
inline constexpr int64_t kHetrunPeerTimeoutSeconds = 15;
inline constexpr int64_t kPodGraceMarginSeconds = 15;
inline constexpr int64_t kPodGraceSeconds =
    kHetrunGraceSeconds + kHetrunPeerTimeoutSeconds + kPodGraceMarginSeconds;

// The port of hetrun run's /metrics endpoint in every pod (HETRUN_METRICS_PORT), declared as
// the container port "metrics" (examples/monitoring/podmonitor.yaml scrapes it by that name).
inline constexpr int64_t kMetricsPort = 9400;
// The namespace whose pods may scrape it (the NetworkPolicy's only other way in).
inline constexpr const char* kMonitoringNamespace = "monitoring";

// Whole-job restarts after a transient failure: the Volcano Job's maxRetry, the JobSet's
// failurePolicy.maxRestarts.
inline constexpr int64_t kMaxJobRestarts = 3;

Json EnvVar(const std::string& name, const std::string& value);

/// metadata: name, the namespace when set, the managed-by label.
Json Metadata(const ClusterSpec& cluster);

/// "<job>-hetrun-secret": the Secret the user creates (SecurityHeader gives the kubectl line).
std::string SecretName(const ClusterSpec& cluster);

/// The pod's container; `gpus` = the replicas of its stage (one worker per GPU). `env` gets the
/// job secret, HETRUN_POD_GRACE_PERIOD and HETRUN_METRICS_PORT appended. From Kubernetes 1.35
/// (cluster.k8s) it restarts in place on exit 75: restartPolicy Never and the rules of
/// ContainerRestartRules().
Json Container(const ClusterSpec& cluster, Json env, int64_t gpus);

/// The pod template around `pod_spec`: Prometheus' scrape annotations, and a memory-backed
/// /dev/shm (NCCL and DataLoader workers outgrow the container runtime's default 64 MiB).
Json PodTemplate(Json pod_spec);

/// The pod spec of one planned task: restartPolicy Never, the grace period, the placement
/// (`placement_key`: "nodeSelector" or "affinity", with its value), the trainer container.
Json PodSpec(const ClusterSpec& cluster, const std::string& placement_key, Json placement, Json env,
             int64_t gpus);

/// The header's lines on the secret and the grace period.
std::string SecurityHeader(const ClusterSpec& cluster);

/// Ingress to the job's pods only from the pods labelled `job_label`=<job name> (the store port,
/// NCCL's ports), and the metrics port from the monitoring namespace.
Json NetworkPolicy(const ClusterSpec& cluster, const std::string& job_label);

/// The header's lines on the trainer's restarts in place (empty when the target has no rules).
std::string RestartHeader(const ClusterSpec& cluster);

/// The NetworkPolicy's header comment.
std::string NetworkPolicyHeader();

/// One task of a pipeline plan: its family, GPUs per pod, stages and the pods' variables.
struct TaskPods {
  std::string task;
  std::string family;
  int64_t gpus = 1;
  int64_t replicas = 0;  ///< the task's stages (one pod each)
  Json env;              ///< HETRUN_TASK ... PIPELINE_STAGE_LAYERS, in the emitted order
};

/// Every task of the plan, in the cluster's task order.
std::vector<TaskPods> PlannedTasks(const PipelinePlan& plan, const ClusterSpec& cluster);

/// "stage N: task[i] family, layers A..B, time T" lines, one per stage.
std::string StageLines(const PipelinePlan& plan);

/// Comma-joined words.
std::string Join(const std::vector<std::string>& words);

}  // namespace hetrun::plan::internal

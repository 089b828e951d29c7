// Volcano Job (batch.volcano.sh/v1alpha1) manifests for a pipeline plan or a homogeneous gang job,
// written as deterministic YAML, with the policies of hetrun's exit-code table
// (hetrun/base/exit_code.h, VolcanoPolicies(); docs/ARCHITECTURE.md §4.3).
#pragma once

#include <string>
#include <vector>

#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan {

/// The heterogeneous pipeline job: one task per stage group (a task name), replicas = its stages,
/// nodeSelector {label_key: family}, the plan's HETRUN_* variables, PIPELINE_STAGE_LAYERS (the
/// task's total layers), hetrun as the command, restartPolicy Never, minAvailable = every pod.
/// A task holding several stages gets comma lists in HETRUN_STAGE, HETRUN_STAGE_LAYERS
/// (FIRST:COUNT) indexed by the pod's VC_TASK_INDEX.
/// Every pod gets HETRUN_JOB_SECRET from the Secret <job>-hetrun-secret (key "secret", created
/// by the user: the header gives the kubectl line), HETRUN_POD_GRACE_PERIOD and a
/// terminationGracePeriodSeconds above hetrun's worst case after SIGTERM. A second YAML document
/// (after "---") is a NetworkPolicy admitting only the job's pods to its pods.
std::string PipelineJobYaml(const PipelinePlan& plan, const ClusterSpec& cluster);

/// The strict-homogeneous gang job for data/tensor parallel work: one task "worker" with every
/// pod of the cluster, a required node affinity on `family` (when empty: the fastest family among
/// the cluster's stages). Same secret, grace period and NetworkPolicy as PipelineJobYaml.
std::string HomogeneousJobYaml(const ClusterSpec& cluster, const std::string& family);

}  // namespace hetrun::plan

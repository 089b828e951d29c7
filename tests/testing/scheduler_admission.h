// Test support: the admission rules of JobSet and Kueue objects that a schema check alone does not
// see (the CRDs' CEL rules, x-kubernetes-validations, which tests/testing/openapi_validator.h
// does not evaluate, and the JobSet, Job and Kueue webhooks), for the fields hetrun writes. Each
// returns every violation as "PATH: what"; empty when the object would be admitted.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hetrun::testing {

/// A batch/v1 Job spec's podFailurePolicy (Kubernetes' Job validation): the pod template's
/// restartPolicy Never, at most 20 rules, each with an action of FailJob, FailIndex (only with
/// backoffLimitPerIndex), Ignore or Count and exactly one of onExitCodes and onPodConditions;
/// onExitCodes with operator In or NotIn, 1 to 255 values in 0..255, ascending and unique, no 0
/// with In, containerName one of the pod's containers; pod conditions with a type and a status
/// of True, False or Unknown. Also: completionMode Indexed needs completions.
std::vector<std::string> JobSpecAdmissionErrors(const nlohmann::json& job_spec,
                                                const std::string& path);

/// A jobset.x-k8s.io/v1alpha2 JobSet: metadata.name, replicated job names unique RFC 1123 labels
/// whose Job names <jobset>-<job>-<index> (and, with network.enableDNSHostnames, pod host names
/// <jobset>-<job>-<index>-<pod>) are labels of at most 63; failurePolicy rule names unique and of
/// the pattern JobSet requires, onJobFailureReasons among the Job failure reasons,
/// targetReplicatedJobs naming replicated jobs; the CEL rule that startupPolicy InOrder excludes
/// dependsOn; and every Job template's JobSpecAdmissionErrors.
std::vector<std::string> JobSetAdmissionErrors(const nlohmann::json& jobset);

/// A kueue.x-k8s.io/v1beta2 ResourceFlavor, ClusterQueue or LocalQueue: the CRDs' CEL rules on
/// the fields hetrun writes (a ClusterQueue's flavors list every covered resource, in order; no
/// borrowingLimit or lendingLimit without a cohort; flavor names unique; a ResourceFlavor's
/// nodeLabels valid labels and present with a topologyName; a LocalQueue names its ClusterQueue).
std::vector<std::string> KueueAdmissionErrors(const nlohmann::json& object);

}  // namespace hetrun::testing

// The Kueue (kueue.x-k8s.io/v1beta2) objects an operator applies once so that an emitted JobSet
// is admitted all-or-nothing: one ResourceFlavor per GPU family of the cluster (its node label),
// a ClusterQueue with a per-flavor nvidia.com/gpu quota, a LocalQueue
// (docs/how-to/jobset-kueue.md).
#pragma once

#include <string>

#include "hetrun/plan/cluster_spec.h"

namespace hetrun::plan {

/// The ClusterQueue that the LocalQueue `queue` points at.
std::string KueueClusterQueueName(const std::string& queue);

/// YAML documents joined by "---": the ResourceFlavors (named after the families, in the
/// cluster's order of first use, nodeLabels {label_key: family}), the ClusterQueue <queue>-cluster
/// (every namespace; one resource group covering nvidia.com/gpu, each flavor's nominalQuota the
/// GPUs the plan's pods of that family request) and the LocalQueue `queue` in the job's
/// namespace (without metadata.namespace when the job has none: kubectl's current one).
std::string KueueQueuesYaml(const ClusterSpec& cluster, const std::string& queue);

}  // namespace hetrun::plan

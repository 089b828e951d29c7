#include "hetrun/plan/kueue_queues.h"

#include <algorithm>
#include <map>

#include "plan/pod_template.h"
#include "plan/yaml_writer.h"

namespace hetrun::plan {
namespace {

using internal::Json;

constexpr const char* kGpuResource = "nvidia.com/gpu";

Json KueueObject(const std::string& kind, Json metadata, Json spec) {
  metadata["labels"] = {{"app.kubernetes.io/managed-by", "hetrun"}};
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", kind},
          {"metadata", std::move(metadata)},
          {"spec", std::move(spec)}};
}

// The families in the cluster's order of first use, with the GPUs its pods request on each.
std::vector<std::pair<std::string, int64_t>> GpusByFamily(const ClusterSpec& cluster) {
  std::vector<std::pair<std::string, int64_t>> families;
  for (const StageSlot& slot : cluster.stages) {
    auto it = std::find_if(families.begin(), families.end(),
                           [&](const auto& entry) { return entry.first == slot.family; });
    if (it == families.end()) it = families.insert(families.end(), {slot.family, 0});
    if (cluster.gpus_per_pod > 0) it->second += slot.gpus;
  }
  return families;
}

}  // namespace

std::string KueueClusterQueueName(const std::string& queue) {
  return queue + "-cluster";
}

std::string KueueQueuesYaml(const ClusterSpec& cluster, const std::string& queue) {
  std::string out;
  Json flavors = Json::array();
  for (const auto& [family, gpus] : GpusByFamily(cluster)) {
    Json flavor = KueueObject("ResourceFlavor", {{"name", family}},
                              {{"nodeLabels", {{cluster.label_key, family}}}});
    out += ToYaml(flavor, "Kueue ResourceFlavor of the GPU family " + family +
                              ": the nodes labelled " + cluster.label_key + "=" + family + ".") +
           "---\n";
    flavors.push_back(
        {{"name", family},
         {"resources", Json::array({{{"name", kGpuResource}, {"nominalQuota", gpus}}})}});
  }
  Json cluster_queue = KueueObject(
      "ClusterQueue", {{"name", KueueClusterQueueName(queue)}},
      {{"namespaceSelector", Json::object()},
       {"resourceGroups", Json::array({{{"coveredResources", Json::array({kGpuResource})},
                                        {"flavors", std::move(flavors)}}})}});
  out += ToYaml(cluster_queue,
                "Kueue ClusterQueue: each flavor's quota is the GPUs this plan's pods request on "
                "it; raise\nit to the GPUs the queue may use. Kueue admits a JobSet only when "
                "every pod fits.") +
         "---\n";
  Json metadata = {{"name", queue}};
  if (!cluster.namespace_name.empty()) metadata["namespace"] = cluster.namespace_name;
  Json local_queue = KueueObject("LocalQueue", std::move(metadata),
                                 {{"clusterQueue", KueueClusterQueueName(queue)}});
  out +=
      ToYaml(local_queue, "Kueue LocalQueue the JobSet's kueue.x-k8s.io/queue-name label names.");
  return out;
}

}  // namespace hetrun::plan

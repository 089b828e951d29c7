#include "hetrun/plan/volcano_job.h"

#include <cstdio>

#include "hetrun/base/exit_code.h"
#include "plan/pod_template.h"
#include "plan/yaml_writer.h"

namespace hetrun::plan {
namespace {

using internal::EnvVar;
using internal::Json;

// The incarnation of the job (docs/explanation/reliability.md, the job secret): the Job's
// version, which Volcano puts on every pod it creates as the annotation volcano.sh/job-version
// and raises on each whole-job restart. It complements node 0's per-rendezvous nonce.
Json IncarnationVar() {
  return {{"name", "HETRUN_INCARNATION"},
          {"valueFrom",
           {{"fieldRef", {{"fieldPath", "metadata.annotations['volcano.sh/job-version']"}}}}}};
}

Json PoliciesJson() {
  Json policies = Json::array();
  for (const VolcanoPolicy& policy : VolcanoPolicies()) {
    if (policy.exit_code >= 0) {
      policies.push_back({{"exitCode", policy.exit_code}, {"action", policy.action}});
    } else {
      policies.push_back({{"event", policy.event}, {"action", policy.action}});
    }
  }
  return policies;
}

// The networkTopology mode of a job: hard for a strict-homogeneous gang (its ring must not
// cross the upper tiers), the cluster file's mode or soft for a pipeline.
std::string TopologyMode(const ClusterSpec& cluster, bool gang) {
  if (gang) return "hard";
  return cluster.network_mode.empty() ? "soft" : cluster.network_mode;
}

// Job-level fields shared by every job we write: a gang of all pods, Volcano's scheduler, the
// svc and env plugins (hosts files, VC_TASK_INDEX) hetrun resolves the topology from, and the
// network topology constraint when the cluster file asks for one.
Json JobSpec(const ClusterSpec& cluster, int64_t pods, bool gang) {
  Json spec = {{"minAvailable", pods},
               {"schedulerName", "volcano"},
               {"queue", cluster.queue},
               {"maxRetry", internal::kMaxJobRestarts},
               {"plugins", {{"env", Json::array()}, {"svc", Json::array()}}},
               {"policies", PoliciesJson()}};
  if (cluster.network_tier) {
    spec["networkTopology"] = {{"mode", TopologyMode(cluster, gang)},
                               {"highestTierAllowed", *cluster.network_tier}};
  }
  return spec;
}

// What the networkTopology constraint does, for the header (empty when there is none).
std::string TopologyHeader(const ClusterSpec& cluster, bool gang) {
  if (!cluster.network_tier) return "";
  const std::string mode = TopologyMode(cluster, gang);
  const std::string tier = std::to_string(*cluster.network_tier);
  std::string text =
      "networkTopology (Volcano 1.12 or later, with HyperNodes describing the fabric): "
      "every pod\ninside one HyperNode of tier " +
      tier +
      " or lower, which keeps the job's traffic (stage boundaries,\ncollectives) off the "
      "fabric's oversubscribed upper tiers.\nMode " +
      mode + ": ";
  text += mode == "hard"
              ? "the job waits until one such HyperNode has room for all its pods.\n"
              : "Volcano prefers one such HyperNode and places the pods anyway when none\nhas "
                "room.\n";
  if (gang && cluster.network_mode == "soft") {
    text +=
        "(The cluster file's network_mode soft does not apply: a data-parallel ring must "
        "not cross tiers.)\n";
  }
  text +=
      "Volcano does not preempt other jobs for a job with a topology constraint: it waits for "
      "free\nnodes instead (docs/how-to/volcano-hypernodes.md).\n";
  return text;
}

std::string PolicyHeader() {
  std::string text =
      "Policies key on hetrun's exit codes (`hetrun exit-codes`); exit-code entries come\n"
      "before the PodFailed catch-all, which would otherwise match first.\n";
  for (const VolcanoPolicy& policy : VolcanoPolicies()) {
    std::string key = policy.exit_code >= 0 ? "exit " + std::to_string(policy.exit_code)
                                            : std::string(policy.event);
    std::string action(policy.action);
    char line[256];
    std::snprintf(line, sizeof line, "  %-14s -> %-12s %.*s\n", key.c_str(), action.c_str(),
                  static_cast<int>(policy.meaning.size()), policy.meaning.data());
    text += line;
  }
  return text;
}

// The job, then the NetworkPolicy that keeps other pods away from its store (Volcano labels
// every pod of a job with volcano.sh/job-name).
std::string Manifests(const Json& job, const std::string& header, const ClusterSpec& cluster) {
  return ToYaml(job,
                header + internal::RestartHeader(cluster) + internal::SecurityHeader(cluster)) +
         "---\n" +
         ToYaml(internal::NetworkPolicy(cluster, "volcano.sh/job-name"),
                internal::NetworkPolicyHeader());
}

Json VolcanoJob(const ClusterSpec& cluster, Json spec) {
  return {{"apiVersion", "batch.volcano.sh/v1alpha1"},
          {"kind", "Job"},
          {"metadata", internal::Metadata(cluster)},
          {"spec", std::move(spec)}};
}

}  // namespace

std::string PipelineJobYaml(const PipelinePlan& plan, const ClusterSpec& cluster) {
  Json tasks = Json::array();
  for (internal::TaskPods& pods : internal::PlannedTasks(plan, cluster)) {
    pods.env.push_back(IncarnationVar());
    Json pod_spec = internal::PodSpec(cluster, "nodeSelector", {{cluster.label_key, pods.family}},
                                      std::move(pods.env), pods.gpus);
    tasks.push_back({{"name", pods.task},
                     {"replicas", pods.replicas},
                     {"template", internal::PodTemplate(std::move(pod_spec))}});
  }
  Json spec = JobSpec(cluster, static_cast<int64_t>(plan.best.stages.size()), false);
  spec["tasks"] = std::move(tasks);

  std::string header = "Heterogeneous pipeline job written by `hetrun plan --emit volcano`.\n";
  header += internal::StageLines(plan);
  header +=
      "A task holding several stages lists them in HETRUN_STAGE and HETRUN_STAGE_LAYERS\n"
      "(FIRST:COUNT); each pod takes the entry at its VC_TASK_INDEX.\n"
      "Live layer moves survive a job restart when every pod sets HETRUN_LAYOUT_STATE to a\n"
      "file on a volume that outlives the pods (the checkpoint volume), e.g.\n"
      "  - {name: HETRUN_LAYOUT_STATE, value: /checkpoints/hetrun-layout.json}\n"
      "(docs/how-to/restarts.md).\n";
  header += TopologyHeader(cluster, false) + PolicyHeader();
  return Manifests(VolcanoJob(cluster, std::move(spec)), header, cluster);
}

std::string HomogeneousJobYaml(const ClusterSpec& cluster, const std::string& family) {
  std::string chosen = family;
  if (chosen.empty()) {
    // The fastest family among the cluster's stages (the first listed on a tie).
    double fastest = -1;
    for (const StageSlot& slot : cluster.stages) {
      if (slot.speed > fastest) {
        fastest = slot.speed;
        chosen = slot.family;
      }
    }
  }
  const auto pods = static_cast<int64_t>(cluster.stages.size());
  Json env = Json::array({EnvVar("HETRUN_TASK", "worker"), EnvVar("HETRUN_GPU_FAMILY", chosen)});
  if (cluster.memory_ceiling_bytes) {
    char bytes[32];
    std::snprintf(bytes, sizeof bytes, "%.0f", *cluster.memory_ceiling_bytes);
    env.push_back(EnvVar("HETRUN_MEMORY_CEILING_BYTES", bytes));
  }
  Json affinity = {{"nodeAffinity",
                    {{"requiredDuringSchedulingIgnoredDuringExecution",
                      {{"nodeSelectorTerms",
                        Json::array({{{"matchExpressions",
                                       Json::array({{{"key", cluster.label_key},
                                                     {"operator", "In"},
                                                     {"values", Json::array({chosen})}}})}}})}}}}}};
  env.push_back(IncarnationVar());
  Json pod_spec = internal::PodSpec(cluster, "affinity", std::move(affinity), std::move(env),
                                    cluster.gpus_per_pod);
  Json spec = JobSpec(cluster, pods, true);
  spec["tasks"] = Json::array({{{"name", "worker"},
                                {"replicas", pods},
                                {"template", internal::PodTemplate(std::move(pod_spec))}}});
  std::string header =
      "Strict-homogeneous gang job written by `hetrun plan --emit volcano "
      "--strict-homogeneous`:\nall " +
      std::to_string(pods) + " pods on " + cluster.label_key + "=" + chosen +
      " or none (data/tensor parallel work).\n" + TopologyHeader(cluster, true) + PolicyHeader();
  return Manifests(VolcanoJob(cluster, std::move(spec)), header, cluster);
}

}  // namespace hetrun::plan

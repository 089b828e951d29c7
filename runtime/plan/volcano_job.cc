#include "hetrun/plan/volcano_job.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "hetrun/base/exit_code.h"
#include "plan/yaml_writer.h"

namespace hetrun::plan {
namespace {

using Json = nlohmann::ordered_json;

Json EnvVar(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

Json Metadata(const ClusterSpec& cluster) {
  Json metadata = {{"name", cluster.job_name}};
  if (!cluster.namespace_name.empty()) metadata["namespace"] = cluster.namespace_name;
  metadata["labels"] = {{"app.kubernetes.io/managed-by", "hetrun"}};
  return metadata;
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

// Job-level fields shared by every job we write: a gang of all pods, Volcano's scheduler, the
// svc and env plugins (hosts files, VC_TASK_INDEX) hetrun resolves the topology from.
Json JobSpec(const ClusterSpec& cluster, int64_t pods) {
  return {{"minAvailable", pods},
          {"schedulerName", "volcano"},
          {"queue", cluster.queue},
          {"maxRetry", 3},
          {"plugins", {{"env", Json::array()}, {"svc", Json::array()}}},
          {"policies", PoliciesJson()}};
}

// hetrun's worst case after SIGTERM: the default grace period (30 s, Kubernetes' default
// terminationGracePeriodSeconds), node 0's final wait for the others (the default peer timeout,
// 15 s), and a margin. The pods get this period, and hetrun reads it back to check the sum.
constexpr int64_t kHetrunGraceSeconds = 30;
constexpr int64_t kHetrunPeerTimeoutSeconds = 15;
constexpr int64_t kPodGraceMarginSeconds = 15;
constexpr int64_t kPodGraceSeconds =
    kHetrunGraceSeconds + kHetrunPeerTimeoutSeconds + kPodGraceMarginSeconds;

// The port of hetrun run's /metrics endpoint in every pod (HETRUN_METRICS_PORT), declared as
// the container port "metrics" (examples/monitoring/podmonitor.yaml scrapes it by that name).
constexpr int64_t kMetricsPort = 9400;
// The namespace whose pods may scrape it (the NetworkPolicy's only other way in).
constexpr const char* kMonitoringNamespace = "monitoring";

std::string SecretName(const ClusterSpec& cluster) {
  return cluster.job_name + "-hetrun-secret";
}

// The variables every pod gets from hetrun's side: the job secret from a Secret the user
// creates (README "The rendezvous store's exposure"), and the pod's grace period.
void AddHetrunEnv(const ClusterSpec& cluster, Json& env) {
  env.push_back(
      {{"name", "HETRUN_JOB_SECRET"},
       {"valueFrom", {{"secretKeyRef", {{"name", SecretName(cluster)}, {"key", "secret"}}}}}});
  env.push_back(EnvVar("HETRUN_POD_GRACE_PERIOD", std::to_string(kPodGraceSeconds) + "s"));
  env.push_back(EnvVar("HETRUN_METRICS_PORT", std::to_string(kMetricsPort)));
}

// The pod template around `pod_spec`: Prometheus' scrape annotations, and a memory-backed
// /dev/shm (NCCL and DataLoader workers outgrow the container runtime's default 64 MiB).
Json PodTemplate(Json pod_spec) {
  pod_spec["volumes"] = Json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}});
  Json annotations = {{"prometheus.io/scrape", "true"},
                      {"prometheus.io/port", std::to_string(kMetricsPort)},
                      {"prometheus.io/path", "/metrics"}};
  return {{"metadata", {{"annotations", std::move(annotations)}}}, {"spec", std::move(pod_spec)}};
}

// Ingress to the job's pods only from the job's pods (the store port, NCCL's ports): Volcano
// labels every pod of a job with volcano.sh/job-name.
Json NetworkPolicy(const ClusterSpec& cluster) {
  Json metadata = {{"name", cluster.job_name + "-hetrun-store"}};
  if (!cluster.namespace_name.empty()) metadata["namespace"] = cluster.namespace_name;
  metadata["labels"] = {{"app.kubernetes.io/managed-by", "hetrun"}};
  Json job_pods = {{"matchLabels", {{"volcano.sh/job-name", cluster.job_name}}}};
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", std::move(metadata)},
          {"spec",
           {{"podSelector", job_pods},
            {"policyTypes", Json::array({"Ingress"})},
            {"ingress",
             Json::array(
                 {{{"from", Json::array({{{"podSelector", job_pods}}})}},
                  // /metrics from the monitoring namespace's pods (Prometheus) only.
                  {{"from",
                    Json::array({{{"namespaceSelector",
                                   {{"matchLabels",
                                     {{"kubernetes.io/metadata.name", kMonitoringNamespace}}}}}}})},
                   {"ports", Json::array({{{"port", kMetricsPort}, {"protocol", "TCP"}}})}}})}}}};
}

std::string SecurityHeader(const ClusterSpec& cluster) {
  return "Before applying, create the job secret once (README \"The rendezvous store's "
         "exposure\"):\n  kubectl create secret generic " +
         SecretName(cluster) +
         (cluster.namespace_name.empty() ? "" : " -n " + cluster.namespace_name) +
         " --from-literal=secret=\"$(openssl rand -hex 32)\"\n"
         "terminationGracePeriodSeconds " +
         std::to_string(kPodGraceSeconds) + " = grace period " +
         std::to_string(kHetrunGraceSeconds) + " s + node 0's final wait (peer timeout) " +
         std::to_string(kHetrunPeerTimeoutSeconds) + " s + margin " +
         std::to_string(kPodGraceMarginSeconds) + " s.\n";
}

// The job, then the NetworkPolicy that keeps other pods away from its store.
std::string Manifests(const Json& job, const std::string& header, const ClusterSpec& cluster) {
  return ToYaml(job, header + SecurityHeader(cluster)) + "---\n" +
         ToYaml(NetworkPolicy(cluster),
                "Only the job's own pods reach its pods (the rendezvous store, NCCL); the\n"
                "metrics port " +
                    std::to_string(kMetricsPort) + " only from the namespace " +
                    kMonitoringNamespace +
                    " (Prometheus; Kubernetes labels every namespace with\n"
                    "kubernetes.io/metadata.name: edit it where your Prometheus runs elsewhere).");
}

// The pod's container; `gpus` = the replicas of its stage (one worker per GPU).
Json Container(const ClusterSpec& cluster, Json env, int64_t gpus) {
  AddHetrunEnv(cluster, env);
  Json args = Json::array(
      {"--nproc-per-node", cluster.gpus_per_pod > 0 ? std::to_string(gpus) : "1", "--"});
  for (const std::string& word : cluster.command) args.push_back(word);
  Json container = {
      {"name", "trainer"},
      {"image", cluster.image},
      {"command", Json::array({"hetrun"})},
      {"args", args},
      {"env", std::move(env)},
      {"ports",
       Json::array({{{"name", "metrics"}, {"containerPort", kMetricsPort}, {"protocol", "TCP"}}})},
      {"volumeMounts", Json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}})}};
  if (cluster.gpus_per_pod > 0) container["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
  return container;
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

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : ",") + word;
  return out;
}

}  // namespace

std::string PipelineJobYaml(const PipelinePlan& plan, const ClusterSpec& cluster) {
  const std::vector<std::string> order = cluster.TaskOrder();
  Json tasks = Json::array();
  for (const std::string& task : order) {
    std::vector<std::string> stage_ids;
    std::vector<std::string> stage_layers;
    int64_t total_layers = 0;
    std::string family;
    int64_t gpus = 1;  // one per task: ParseClusterSpec requires it
    for (const StageFigures& stage : plan.best.stages) {
      if (stage.slot.task != task) continue;
      family = stage.slot.family;
      gpus = stage.slot.gpus;
      stage_ids.push_back(std::to_string(stage.stage));
      stage_layers.push_back(std::to_string(stage.first_layer) + ":" +
                             std::to_string(stage.layers));
      total_layers += stage.layers;
    }
    Json env =
        Json::array({EnvVar("HETRUN_TASK", task), EnvVar("HETRUN_TASK_ORDER", Join(order)),
                     EnvVar("HETRUN_STAGE", Join(stage_ids)), EnvVar("HETRUN_STAGE_NAME", task),
                     EnvVar("HETRUN_STAGE_LAYERS", Join(stage_layers)),
                     EnvVar("HETRUN_MICRO_BATCH", std::to_string(plan.micro_batch_size)),
                     EnvVar("HETRUN_MICRO_BATCHES", std::to_string(plan.micro_batches)),
                     EnvVar("HETRUN_GPU_FAMILY", family)});
    if (cluster.memory_ceiling_bytes) {
      char bytes[32];
      std::snprintf(bytes, sizeof bytes, "%.0f", *cluster.memory_ceiling_bytes);
      env.push_back(EnvVar("HETRUN_MEMORY_CEILING_BYTES", bytes));
    }
    env.push_back(EnvVar("PIPELINE_STAGE_LAYERS", std::to_string(total_layers)));
    Json pod_spec = {{"restartPolicy", "Never"},
                     {"terminationGracePeriodSeconds", kPodGraceSeconds},
                     {"nodeSelector", {{cluster.label_key, family}}},
                     {"containers", Json::array({Container(cluster, std::move(env), gpus)})}};
    tasks.push_back({{"name", task},
                     {"replicas", static_cast<int64_t>(stage_ids.size())},
                     {"template", PodTemplate(std::move(pod_spec))}});
  }
  Json spec = JobSpec(cluster, static_cast<int64_t>(plan.best.stages.size()));
  spec["tasks"] = std::move(tasks);
  Json job = {{"apiVersion", "batch.volcano.sh/v1alpha1"},
              {"kind", "Job"},
              {"metadata", Metadata(cluster)},
              {"spec", std::move(spec)}};

  std::string header = "Heterogeneous pipeline job written by `hetrun plan --emit volcano`.\n";
  for (const StageFigures& stage : plan.best.stages) {
    char line[256];
    std::snprintf(line, sizeof line, "stage %lld: %s[%lld] %s, layers %lld..%lld, time %.4f\n",
                  static_cast<long long>(stage.stage), stage.slot.task.c_str(),
                  static_cast<long long>(stage.slot.task_index), stage.slot.family.c_str(),
                  static_cast<long long>(stage.first_layer),
                  static_cast<long long>(stage.first_layer + stage.layers - 1), stage.time);
    header += line;
  }
  header +=
      "A task holding several stages lists them in HETRUN_STAGE and HETRUN_STAGE_LAYERS\n"
      "(FIRST:COUNT); each pod takes the entry at its VC_TASK_INDEX.\n"
      "Live layer moves survive a job restart when every pod sets HETRUN_LAYOUT_STATE to a\n"
      "file on a volume that outlives the pods (the checkpoint volume), e.g.\n"
      "  - {name: HETRUN_LAYOUT_STATE, value: /checkpoints/hetrun-layout.json}\n"
      "(README \"Restarts and the layout state\").\n";
  header += PolicyHeader();
  return Manifests(job, header, cluster);
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
  Json pod_spec = {
      {"restartPolicy", "Never"},
      {"terminationGracePeriodSeconds", kPodGraceSeconds},
      {"affinity", std::move(affinity)},
      {"containers", Json::array({Container(cluster, std::move(env), cluster.gpus_per_pod)})}};
  Json spec = JobSpec(cluster, pods);
  spec["tasks"] = Json::array(
      {{{"name", "worker"}, {"replicas", pods}, {"template", PodTemplate(std::move(pod_spec))}}});
  Json job = {{"apiVersion", "batch.volcano.sh/v1alpha1"},
              {"kind", "Job"},
              {"metadata", Metadata(cluster)},
              {"spec", std::move(spec)}};
  std::string header =
      "Strict-homogeneous gang job written by `hetrun plan --emit volcano "
      "--strict-homogeneous`:\nall " +
      std::to_string(pods) + " pods on " + cluster.label_key + "=" + chosen +
      " or none (data/tensor parallel work).\n" + PolicyHeader();
  return Manifests(job, header, cluster);
}

}  // namespace hetrun::plan

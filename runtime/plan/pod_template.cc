#include "plan/pod_template.h"

#include <cstdio>

#include "hetrun/plan/restart_rules.h"

namespace hetrun::plan::internal {

Json EnvVar(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

Json Metadata(const ClusterSpec& cluster) {
  Json metadata = {{"name", cluster.job_name}};
  if (!cluster.namespace_name.empty()) metadata["namespace"] = cluster.namespace_name;
  metadata["labels"] = {{"app.kubernetes.io/managed-by", "hetrun"}};
  return metadata;
}

std::string SecretName(const ClusterSpec& cluster) {
  return cluster.job_name + "-hetrun-secret";
}

namespace {

// The variables every pod gets from hetrun's side: the job secret from a Secret the user
// creates (docs "The rendezvous store's exposure"), and the pod's grace period.
void AddHetrunEnv(const ClusterSpec& cluster, Json& env) {
  env.push_back(
      {{"name", "HETRUN_JOB_SECRET"},
       {"valueFrom", {{"secretKeyRef", {{"name", SecretName(cluster)}, {"key", "secret"}}}}}});
  env.push_back(EnvVar("HETRUN_POD_GRACE_PERIOD", std::to_string(kPodGraceSeconds) + "s"));
  env.push_back(EnvVar("HETRUN_METRICS_PORT", std::to_string(kMetricsPort)));
}

}  // namespace

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
  const std::vector<ContainerRestartRule> rules = ContainerRestartRules(cluster.k8s);
  if (!rules.empty()) {
    // A container with rules must state its own restartPolicy (KEP-5307): Never, the pod's.
    container["restartPolicy"] = "Never";
    Json entries = Json::array();
    for (const ContainerRestartRule& rule : rules) {
      entries.push_back(
          {{"action", rule.action}, {"exitCodes", {{"operator", "In"}, {"values", rule.codes}}}});
    }
    container["restartPolicyRules"] = std::move(entries);
  }
  return container;
}

Json PodTemplate(Json pod_spec) {
  pod_spec["volumes"] = Json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}});
  Json annotations = {{"prometheus.io/scrape", "true"},
                      {"prometheus.io/port", std::to_string(kMetricsPort)},
                      {"prometheus.io/path", "/metrics"}};
  return {{"metadata", {{"annotations", std::move(annotations)}}}, {"spec", std::move(pod_spec)}};
}

Json PodSpec(const ClusterSpec& cluster, const std::string& placement_key, Json placement, Json env,
             int64_t gpus) {
  return {{"restartPolicy", "Never"},
          {"terminationGracePeriodSeconds", kPodGraceSeconds},
          {placement_key, std::move(placement)},
          {"containers", Json::array({Container(cluster, std::move(env), gpus)})}};
}

std::string SecurityHeader(const ClusterSpec& cluster) {
  return "Before applying, create the job secret once (docs/explanation/reliability.md):\n  "
         "kubectl create secret generic " +
         SecretName(cluster) +
         (cluster.namespace_name.empty() ? "" : " -n " + cluster.namespace_name) +
         " --from-literal=secret=\"$(openssl rand -hex 32)\"\n"
         "terminationGracePeriodSeconds " +
         std::to_string(kPodGraceSeconds) + " = grace period " +
         std::to_string(kHetrunGraceSeconds) + " s + node 0's final wait (peer timeout) " +
         std::to_string(kHetrunPeerTimeoutSeconds) + " s + margin " +
         std::to_string(kPodGraceMarginSeconds) + " s.\n";
}

Json NetworkPolicy(const ClusterSpec& cluster, const std::string& job_label) {
  Json metadata = {{"name", cluster.job_name + "-hetrun-store"}};
  if (!cluster.namespace_name.empty()) metadata["namespace"] = cluster.namespace_name;
  metadata["labels"] = {{"app.kubernetes.io/managed-by", "hetrun"}};
  Json job_pods = {{"matchLabels", {{job_label, cluster.job_name}}}};
  Json monitoring = {{"namespaceSelector",
                      {{"matchLabels", {{"kubernetes.io/metadata.name", kMonitoringNamespace}}}}}};
  Json ingress =
      Json::array({{{"from", Json::array({{{"podSelector", job_pods}}})}},
                   // /metrics from the monitoring namespace's pods (Prometheus) only.
                   {{"from", Json::array({monitoring})},
                    {"ports", Json::array({{{"port", kMetricsPort}, {"protocol", "TCP"}}})}}});
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", std::move(metadata)},
          {"spec",
           {{"podSelector", job_pods},
            {"policyTypes", Json::array({"Ingress"})},
            {"ingress", std::move(ingress)}}}};
}

std::string RestartHeader(const ClusterSpec& cluster) {
  const std::vector<ContainerRestartRule> rules = ContainerRestartRules(cluster.k8s);
  if (rules.empty()) return "";
  std::string codes;
  for (int code : rules.front().codes) codes += (codes.empty() ? "" : ",") + std::to_string(code);
  const bool all = rules.front().action == "RestartAllContainers";
  return "Kubernetes " + cluster.k8s.Describe() + " (--k8s-version): on exit " + codes +
         " (transient) the trainer\n" +
         (all ? "restarts with every container of its pod (RestartAllContainers, KEP-5532)"
              : "container restarts in place (restartPolicyRules, KEP-5307)") +
         ": the pod keeps its node,\nimages and scheduling. Every other code goes to the "
         "job-level policy\n(`hetrun exit-codes --restarts --markdown`).\n";
}

std::string NetworkPolicyHeader() {
  return "Only the job's own pods reach its pods (the rendezvous store, NCCL); the\n"
         "metrics port " +
         std::to_string(kMetricsPort) + " only from the namespace " + kMonitoringNamespace +
         " (Prometheus; Kubernetes labels every namespace with\n"
         "kubernetes.io/metadata.name: edit it where your Prometheus runs elsewhere).";
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : ",") + word;
  return out;
}

std::vector<TaskPods> PlannedTasks(const PipelinePlan& plan, const ClusterSpec& cluster) {
  const std::vector<std::string> order = cluster.TaskOrder();
  std::vector<TaskPods> tasks;
  for (const std::string& task : order) {
    TaskPods pods{task, "", 1, 0, Json::array()};  // one GPU count per task: ParseClusterSpec
    std::vector<std::string> stage_ids;
    std::vector<std::string> stage_layers;
    int64_t total_layers = 0;
    std::string model;
    for (const StageFigures& stage : plan.best.stages) {
      if (stage.slot.task != task) continue;
      pods.family = stage.slot.family;
      model = stage.slot.model;
      pods.gpus = stage.slot.gpus;
      stage_ids.push_back(std::to_string(stage.stage));
      stage_layers.push_back(std::to_string(stage.first_layer) + ":" +
                             std::to_string(stage.layers));
      total_layers += stage.layers;
    }
    pods.replicas = static_cast<int64_t>(stage_ids.size());
    pods.env =
        Json::array({EnvVar("HETRUN_TASK", task), EnvVar("HETRUN_TASK_ORDER", Join(order)),
                     EnvVar("HETRUN_STAGE", Join(stage_ids)), EnvVar("HETRUN_STAGE_NAME", task),
                     EnvVar("HETRUN_STAGE_LAYERS", Join(stage_layers)),
                     EnvVar("HETRUN_MICRO_BATCH", std::to_string(plan.micro_batch_size)),
                     EnvVar("HETRUN_MICRO_BATCHES", std::to_string(plan.micro_batches)),
                     EnvVar("HETRUN_GPU_FAMILY", pods.family)});
    // A task whose cluster entries name a model: the workers' model (hetrun run keeps it unless
    // the node's GPUs are declared, as for HETRUN_GPU_FAMILY).
    if (!model.empty()) pods.env.push_back(EnvVar("HETRUN_GPU_MODEL", model));
    if (cluster.memory_ceiling_bytes) {
      char bytes[32];
      std::snprintf(bytes, sizeof bytes, "%.0f", *cluster.memory_ceiling_bytes);
      pods.env.push_back(EnvVar("HETRUN_MEMORY_CEILING_BYTES", bytes));
    }
    pods.env.push_back(EnvVar("PIPELINE_STAGE_LAYERS", std::to_string(total_layers)));
    tasks.push_back(std::move(pods));
  }
  return tasks;
}

std::string StageLines(const PipelinePlan& plan) {
  std::string text;
  for (const StageFigures& stage : plan.best.stages) {
    char line[256];
    std::snprintf(line, sizeof line, "stage %lld: %s[%lld] %s, layers %lld..%lld, time %.4f\n",
                  static_cast<long long>(stage.stage), stage.slot.task.c_str(),
                  static_cast<long long>(stage.slot.task_index), stage.slot.family.c_str(),
                  static_cast<long long>(stage.first_layer),
                  static_cast<long long>(stage.first_layer + stage.layers - 1), stage.time);
    text += line;
  }
  return text;
}

}  // namespace hetrun::plan::internal

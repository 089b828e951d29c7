#include "scheduler_admission.h"

#include <algorithm>
#include <regex>
#include <set>

namespace hetrun::testing {
namespace {

using Json = nlohmann::json;

bool IsDnsLabel(const std::string& name) {
  static const std::regex kLabel("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return name.size() <= 63 && std::regex_match(name, kLabel);
}

bool IsLabelValue(const std::string& value) {
  static const std::regex kValue("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
  return value.size() <= 63 && std::regex_match(value, kValue);
}

void CheckExitCodes(const Json& rule, const std::set<std::string>& containers,
                    const std::string& at, std::vector<std::string>& errors) {
  const Json& on = rule["onExitCodes"];
  const std::string op = on.value("operator", "");
  if (op != "In" && op != "NotIn") errors.push_back(at + ".operator: '" + op + "' not In/NotIn");
  if (on.contains("containerName") &&
      !containers.contains(on["containerName"].get<std::string>())) {
    errors.push_back(at + ".containerName: not a container of the pod");
  }
  const Json& values = on.value("values", Json::array());
  if (values.empty() || values.size() > 255) {
    errors.push_back(at + ".values: must have 1 to 255 entries");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t code = values[i].get<int64_t>();
    std::string where = at + ".values[" + std::to_string(i) + "]";
    if (code < 0 || code > 255) errors.push_back(where + ": exit code outside 0..255");
    if (code == 0 && op == "In") errors.push_back(where + ": 0 cannot be used with In");
    if (i > 0 && values[i - 1].get<int64_t>() >= code) {
      errors.push_back(where + ": values must be ascending and unique");
    }
  }
}

void CheckPodConditions(const Json& rule, const std::string& at, std::vector<std::string>& errors) {
  for (const Json& pattern : rule["onPodConditions"]) {
    if (pattern.value("type", "").empty()) errors.push_back(at + ": a pattern without a type");
    std::string status = pattern.value("status", "True");
    if (status != "True" && status != "False" && status != "Unknown") {
      errors.push_back(at + ".status: '" + status + "' not True/False/Unknown");
    }
  }
}

void CheckPodFailurePolicy(const Json& spec, const std::string& path,
                           std::vector<std::string>& errors) {
  const Json& pod = spec.value("template", Json::object()).value("spec", Json::object());
  if (pod.value("restartPolicy", "") != "Never") {
    errors.push_back(path + ".template.spec.restartPolicy: must be Never with a podFailurePolicy");
  }
  std::set<std::string> containers;
  for (const Json& c : pod.value("containers", Json::array()))
    containers.insert(c.value("name", ""));
  const Json& rules = spec["podFailurePolicy"].value("rules", Json::array());
  if (rules.size() > 20) errors.push_back(path + ".podFailurePolicy.rules: more than 20");
  static const std::set<std::string> kActions = {"FailJob", "FailIndex", "Ignore", "Count"};
  for (size_t r = 0; r < rules.size(); ++r) {
    const Json& rule = rules[r];
    std::string at = path + ".podFailurePolicy.rules[" + std::to_string(r) + "]";
    std::string action = rule.value("action", "");
    if (!kActions.contains(action)) errors.push_back(at + ".action: '" + action + "' unknown");
    if (action == "FailIndex" && !spec.contains("backoffLimitPerIndex")) {
      errors.push_back(at + ".action: FailIndex needs backoffLimitPerIndex");
    }
    bool codes = rule.contains("onExitCodes");
    bool conditions = rule.contains("onPodConditions");
    if (codes == conditions) {
      errors.push_back(at + ": needs exactly one of onExitCodes and onPodConditions");
    }
    if (codes) CheckExitCodes(rule, containers, at + ".onExitCodes", errors);
    if (conditions) CheckPodConditions(rule, at + ".onPodConditions", errors);
  }
}

void CheckFailurePolicy(const Json& policy, const std::set<std::string>& jobs,
                        std::vector<std::string>& errors) {
  static const std::regex kRuleName("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$");
  static const std::set<std::string> kReasons = {"BackoffLimitExceeded", "DeadlineExceeded",
                                                 "FailedIndexes", "MaxFailedIndexesExceeded",
                                                 "PodFailurePolicy"};
  std::set<std::string> names;
  const Json& rules = policy.value("rules", Json::array());
  for (size_t r = 0; r < rules.size(); ++r) {
    std::string at = "$.spec.failurePolicy.rules[" + std::to_string(r) + "]";
    std::string name = rules[r].value("name", "");
    if (!std::regex_match(name, kRuleName)) errors.push_back(at + ".name: '" + name + "' invalid");
    if (!names.insert(name).second) errors.push_back(at + ".name: duplicate " + name);
    for (const Json& reason : rules[r].value("onJobFailureReasons", Json::array())) {
      if (!kReasons.contains(reason.get<std::string>())) {
        errors.push_back(at + ".onJobFailureReasons: unknown reason " + reason.dump());
      }
    }
    for (const Json& job : rules[r].value("targetReplicatedJobs", Json::array())) {
      if (!jobs.contains(job.get<std::string>())) {
        errors.push_back(at + ".targetReplicatedJobs: no replicated job " + job.dump());
      }
    }
  }
}

void CheckReplicatedJob(const Json& job, const std::string& jobset, bool dns, const std::string& at,
                        std::vector<std::string>& errors) {
  std::string name = job.value("name", "");
  if (!IsDnsLabel(name)) errors.push_back(at + ".name: '" + name + "' is not an RFC 1123 label");
  int64_t replicas = job.value("replicas", int64_t{1});
  std::string job_name =
      jobset + "-" + name + "-" + std::to_string(std::max<int64_t>(replicas - 1, 0));
  if (!IsDnsLabel(job_name)) errors.push_back(at + ": Job name '" + job_name + "' is not a label");
  const Json& spec = job.value("template", Json::object()).value("spec", Json::object());
  int64_t pods = spec.value("completions", spec.value("parallelism", int64_t{1}));
  std::string host = job_name + "-" + std::to_string(std::max<int64_t>(pods - 1, 0));
  if (dns && !IsDnsLabel(host)) errors.push_back(at + ": pod host name '" + host + "' too long");
  for (const std::string& error : JobSpecAdmissionErrors(spec, at + ".template.spec")) {
    errors.push_back(error);
  }
}

void CheckClusterQueue(const Json& spec, std::vector<std::string>& errors) {
  const bool cohort = spec.contains("cohortName");
  std::set<std::string> flavor_names;
  const Json& groups = spec.value("resourceGroups", Json::array());
  for (size_t g = 0; g < groups.size(); ++g) {
    std::string at = "$.spec.resourceGroups[" + std::to_string(g) + "]";
    const Json& covered = groups[g].value("coveredResources", Json::array());
    const Json& flavors = groups[g].value("flavors", Json::array());
    for (size_t f = 0; f < flavors.size(); ++f) {
      std::string fat = at + ".flavors[" + std::to_string(f) + "]";
      if (!flavor_names.insert(flavors[f].value("name", "")).second) {
        errors.push_back(fat + ".name: flavor listed twice in the ClusterQueue");
      }
      const Json& resources = flavors[f].value("resources", Json::array());
      if (resources.size() != covered.size()) {
        errors.push_back(fat + ": flavor defines resources not matching coveredResources");
      }
      for (size_t r = 0; r < resources.size() && r < covered.size(); ++r) {
        if (resources[r].value("name", "") != covered[r].get<std::string>()) {
          errors.push_back(fat + ".resources[" + std::to_string(r) +
                           "].name: not coveredResources[" + std::to_string(r) + "]");
        }
        if (!cohort &&
            (resources[r].contains("borrowingLimit") || resources[r].contains("lendingLimit"))) {
          errors.push_back(fat + ": borrowingLimit/lendingLimit must be nil without a cohort");
        }
      }
    }
  }
}

void CheckResourceFlavor(const Json& spec, std::vector<std::string>& errors) {
  const Json& labels = spec.value("nodeLabels", Json::object());
  for (const auto& [key, value] : labels.items()) {
    std::string name = key.substr(key.rfind('/') == std::string::npos ? 0 : key.rfind('/') + 1);
    if (name.empty() || !IsLabelValue(name) || !value.is_string() ||
        !IsLabelValue(value.get<std::string>())) {
      errors.push_back("$.spec.nodeLabels." + key + ": not a valid label");
    }
  }
  if (spec.contains("topologyName") && labels.empty()) {
    errors.push_back("$.spec: at least one nodeLabel is required when topology is set");
  }
}

}  // namespace

std::vector<std::string> JobSpecAdmissionErrors(const Json& spec, const std::string& path) {
  std::vector<std::string> errors;
  if (spec.value("completionMode", "") == "Indexed" && !spec.contains("completions")) {
    errors.push_back(path + ".completions: required with completionMode Indexed");
  }
  if (spec.contains("podFailurePolicy")) CheckPodFailurePolicy(spec, path, errors);
  return errors;
}

std::vector<std::string> JobSetAdmissionErrors(const Json& jobset) {
  std::vector<std::string> errors;
  std::string name = jobset.value("metadata", Json::object()).value("name", "");
  if (name.empty()) errors.push_back("$.metadata.name: missing");
  const Json& spec = jobset.value("spec", Json::object());
  const bool dns = spec.value("network", Json::object()).value("enableDNSHostnames", true);
  std::set<std::string> jobs;
  bool depends = false;
  const Json& replicated = spec.value("replicatedJobs", Json::array());
  for (size_t j = 0; j < replicated.size(); ++j) {
    std::string at = "$.spec.replicatedJobs[" + std::to_string(j) + "]";
    if (!jobs.insert(replicated[j].value("name", "")).second) {
      errors.push_back(at + ".name: duplicate replicated job");
    }
    depends = depends || replicated[j].contains("dependsOn");
    CheckReplicatedJob(replicated[j], name, dns, at, errors);
  }
  if (spec.contains("failurePolicy")) CheckFailurePolicy(spec["failurePolicy"], jobs, errors);
  if (spec.contains("startupPolicy") &&
      spec["startupPolicy"].value("startupPolicyOrder", "") == "InOrder" && depends) {
    errors.push_back("$.spec: StartupPolicy and DependsOn APIs are mutually exclusive");
  }
  return errors;
}

std::vector<std::string> KueueAdmissionErrors(const Json& object) {
  std::vector<std::string> errors;
  if (object.value("metadata", Json::object()).value("name", "").empty()) {
    errors.push_back("$.metadata.name: missing");
  }
  const std::string kind = object.value("kind", "");
  const Json& spec = object.value("spec", Json::object());
  if (kind == "ClusterQueue") {
    CheckClusterQueue(spec, errors);
  } else if (kind == "ResourceFlavor") {
    CheckResourceFlavor(spec, errors);
  } else if (kind == "LocalQueue") {
    if (spec.value("clusterQueue", "").empty()) errors.push_back("$.spec.clusterQueue: missing");
  } else {
    errors.push_back("$.kind: '" + kind + "' is not a Kueue object hetrun writes");
  }
  return errors;
}

}  // namespace hetrun::testing

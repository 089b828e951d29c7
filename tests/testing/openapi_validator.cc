#include "openapi_validator.h"

#include <regex>
#include <set>
#include <stdexcept>

namespace hetrun::testing {
namespace {

using Json = nlohmann::json;

std::string TypeOf(const Json& value) {
  if (value.is_object()) return "object";
  if (value.is_array()) return "array";
  if (value.is_string()) return "string";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return "null";
}

bool Flag(const Json& schema, const char* key) {
  return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>();
}

void Validate(const Json& schema, const Json& value, const std::string& path,
              std::vector<std::string>& errors);

// anyOf: at least one branch accepts the value (CRDs use it beside x-kubernetes-int-or-string).
void ValidateAnyOf(const Json& schema, const Json& value, const std::string& path,
                   std::vector<std::string>& errors) {
  if (!schema.contains("anyOf")) return;
  std::vector<std::string> first;
  for (const Json& branch : schema["anyOf"]) {
    std::vector<std::string> branch_errors;
    Validate(branch, value, path, branch_errors);
    if (branch_errors.empty()) return;
    if (first.empty()) first = branch_errors;
  }
  errors.push_back(path + ": matches no anyOf branch (first: " +
                   (first.empty() ? std::string("?") : first.front()) + ")");
}

void ValidateString(const Json& schema, const std::string& text, const std::string& path,
                    std::vector<std::string>& errors) {
  auto fail = [&](const std::string& what) { errors.push_back(path + ": " + what); };
  if (schema.contains("maxLength") && text.size() > schema["maxLength"].get<size_t>()) {
    fail("longer than " + schema["maxLength"].dump());
  }
  if (schema.contains("minLength") && text.size() < schema["minLength"].get<size_t>()) {
    fail("shorter than " + schema["minLength"].dump());
  }
  if (schema.contains("pattern") &&
      !std::regex_search(text, std::regex(schema["pattern"].get<std::string>()))) {
    fail("'" + text + "' does not match " + schema["pattern"].get<std::string>());
  }
}

// x-kubernetes-list-type: set (unique items) or map (unique x-kubernetes-list-map-keys).
void ValidateListType(const Json& schema, const Json& value, const std::string& path,
                      std::vector<std::string>& errors) {
  const std::string type = schema.value("x-kubernetes-list-type", "");
  std::set<std::string> seen;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string key;
    if (type == "set") {
      key = value[i].dump();
    } else if (type == "map" && schema.contains("x-kubernetes-list-map-keys")) {
      for (const Json& name : schema["x-kubernetes-list-map-keys"]) {
        key += value[i].value(name.get<std::string>(), Json()).dump() + "/";
      }
    } else {
      return;
    }
    if (!seen.insert(key).second) {
      errors.push_back(path + "[" + std::to_string(i) + "]: duplicate entry of a list-type " +
                       type + " " + key);
    }
  }
}

void ValidateArray(const Json& schema, const Json& value, const std::string& path,
                   std::vector<std::string>& errors) {
  auto fail = [&](const std::string& what) { errors.push_back(path + ": " + what); };
  if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
    fail("fewer than " + schema["minItems"].dump() + " items");
  }
  if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
    fail("more than " + schema["maxItems"].dump() + " items");
  }
  ValidateListType(schema, value, path, errors);
  if (schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      Validate(schema["items"], value[i], path + "[" + std::to_string(i) + "]", errors);
    }
  }
}

void ValidateObject(const Json& schema, const Json& value, const std::string& path,
                    std::vector<std::string>& errors) {
  if (schema.contains("required")) {
    for (const Json& key : schema["required"]) {
      if (!value.contains(key.get<std::string>())) {
        errors.push_back(path + ": missing required field " + key.dump());
      }
    }
  }
  if (schema.contains("maxProperties") && value.size() > schema["maxProperties"].get<size_t>()) {
    errors.push_back(path + ": more than " + schema["maxProperties"].dump() + " properties");
  }
  const bool preserve = Flag(schema, "x-kubernetes-preserve-unknown-fields");
  const bool has_properties = schema.contains("properties");
  for (const auto& [key, item] : value.items()) {
    std::string at = path + "." + key;
    if (has_properties && schema["properties"].contains(key)) {
      Validate(schema["properties"][key], item, at, errors);
    } else if (schema.contains("additionalProperties") &&
               schema["additionalProperties"].is_object()) {
      Validate(schema["additionalProperties"], item, at, errors);
    } else if (has_properties && !preserve &&
               !(schema.contains("additionalProperties") &&
                 schema["additionalProperties"] == true)) {
      errors.push_back(at + ": unknown field");
    }
  }
}

void Validate(const Json& schema, const Json& value, const std::string& path,
              std::vector<std::string>& errors) {
  auto fail = [&](const std::string& what) { errors.push_back(path + ": " + what); };
  const std::string actual = TypeOf(value);

  if (Flag(schema, "x-kubernetes-int-or-string")) {
    if (actual != "integer" && actual != "string") {
      fail("expected integer or string, got " + actual);
      return;
    }
  } else if (schema.contains("type")) {
    const std::string expected = schema["type"].get<std::string>();
    bool ok = expected == actual || (expected == "number" && actual == "integer");
    if (!ok) {
      fail("expected " + expected + ", got " + actual + " " + value.dump());
      return;
    }
  }
  ValidateAnyOf(schema, value, path, errors);
  if (schema.contains("enum")) {
    bool found = false;
    for (const Json& option : schema["enum"]) found = found || option == value;
    if (!found) fail("value " + value.dump() + " is not one of " + schema["enum"].dump());
  }
  if (value.is_string()) ValidateString(schema, value.get_ref<const std::string&>(), path, errors);
  if (value.is_number() && schema.contains("minimum") &&
      value.get<double>() < schema["minimum"].get<double>()) {
    fail("less than the minimum " + schema["minimum"].dump());
  }
  if (value.is_number() && schema.contains("maximum") &&
      value.get<double>() > schema["maximum"].get<double>()) {
    fail("more than the maximum " + schema["maximum"].dump());
  }
  if (value.is_array()) ValidateArray(schema, value, path, errors);
  if (value.is_object()) ValidateObject(schema, value, path, errors);
}

}  // namespace

std::vector<std::string> ValidateOpenApi(const Json& schema, const Json& value) {
  std::vector<std::string> errors;
  Validate(schema, value, "$", errors);
  return errors;
}

Json CrdSchema(const Json& crd, const std::string& version) {
  for (const Json& entry : crd.at("spec").at("versions")) {
    if (entry.at("name") == version) return entry.at("schema").at("openAPIV3Schema");
  }
  throw std::runtime_error("the CRD has no version " + version);
}

std::vector<std::string> VolcanoAdmissionErrors(const Json& job) {
  std::vector<std::string> errors;
  static const std::regex kLabel("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  if (!job.contains("metadata") || !job["metadata"].contains("name")) {
    errors.push_back("$.metadata.name: missing");
  }
  const Json& spec = job.value("spec", Json::object());
  int64_t replicas = 0;
  std::set<std::string> names;
  const Json& tasks = spec.value("tasks", Json::array());
  if (tasks.empty()) errors.push_back("$.spec.tasks: No task specified");
  for (size_t t = 0; t < tasks.size(); ++t) {
    const Json& task = tasks[t];
    std::string at = "$.spec.tasks[" + std::to_string(t) + "]";
    std::string name = task.value("name", "");
    if (!std::regex_match(name, kLabel) || name.size() > 63) {
      errors.push_back(at + ".name: '" + name + "' is not an RFC 1123 label");
    }
    if (!names.insert(name).second) errors.push_back(at + ".name: duplicate task " + name);
    int64_t task_replicas = task.value("replicas", int64_t{0});
    replicas += task_replicas;
    if (task.value("minAvailable", int64_t{0}) > task_replicas) {
      errors.push_back(at + ".minAvailable: more than replicas");
    }
    const Json& pod = task.value("template", Json::object()).value("spec", Json::object());
    if (pod.value("restartPolicy", "") != "Never") {
      errors.push_back(at + ".template.spec.restartPolicy: must be Never for exit-code policies");
    }
  }
  if (spec.value("minAvailable", int64_t{0}) > replicas) {
    errors.push_back("$.spec.minAvailable: more than the tasks' replicas");
  }
  std::set<int64_t> codes;
  bool catch_all_seen = false;
  const Json& policies = spec.value("policies", Json::array());
  for (size_t p = 0; p < policies.size(); ++p) {
    const Json& policy = policies[p];
    std::string at = "$.spec.policies[" + std::to_string(p) + "]";
    bool has_event = policy.contains("event") || policy.contains("events");
    bool has_code = policy.contains("exitCode");
    if (has_event == has_code) errors.push_back(at + ": needs exactly one of event and exitCode");
    if (!policy.contains("action")) errors.push_back(at + ": no action");
    if (has_code) {
      int64_t code = policy["exitCode"].get<int64_t>();
      if (code == 0) errors.push_back(at + ".exitCode: 0 is not a valid error code");
      if (!codes.insert(code).second) errors.push_back(at + ".exitCode: duplicate");
      if (catch_all_seen) {
        errors.push_back(at + ": exitCode policy after a PodFailed/'*' policy never matches");
      }
    }
    std::string event = policy.value("event", "");
    if (event == "PodFailed" || event == "*") catch_all_seen = true;
  }
  return errors;
}

}  // namespace hetrun::testing

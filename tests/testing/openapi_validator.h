// Test support: validates a JSON value against the OpenAPI v3 schema subset Kubernetes CRDs use
// (type, properties, required, items, enum, additionalProperties, anyOf,
// x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields, x-kubernetes-list-type set
// and map (unique items, unique map keys), plus minItems, maxItems, maxProperties, minimum,
// maximum, minLength, maxLength and pattern), the way the API server would with strict field
// validation: unknown fields are errors. Not evaluated: format, default, and the CEL rules of
// x-kubernetes-validations (scheduler_admission.h checks the ones that matter to hetrun).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hetrun::testing {

/// Every violation, as "PATH: what" ("$.spec.tasks[0].template.spec.containers[0].env[3].value:
/// expected string, got 48"). Empty when `value` conforms.
std::vector<std::string> ValidateOpenApi(const nlohmann::json& schema, const nlohmann::json& value);

/// The openAPIV3Schema of `version` in a CustomResourceDefinition (parsed from YAML); throws when
/// absent.
nlohmann::json CrdSchema(const nlohmann::json& crd, const std::string& version);

/// Checks the Volcano admission webhook makes beyond the schema (reference/env_contracts.md §5.2,
/// launcher_reliability.md §6): task names unique RFC 1123 labels, minAvailable <= replicas,
/// policies with exactly one of event/exitCode, exit codes non-zero and unique, no exitCode policy
/// after a PodFailed or '*' policy, pods with restartPolicy Never, metadata.name present.
std::vector<std::string> VolcanoAdmissionErrors(const nlohmann::json& job);

}  // namespace hetrun::testing

// Test support: YAML documents (yaml-cpp) as JSON values, resolving plain scalars the way
// Kubernetes' YAML reader does (YAML 1.2 core schema): a quoted "8" is a string, a plain 8 an int.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hetrun::testing {

/// Every document of `text` as JSON; throws std::runtime_error (with yaml-cpp's message) when the
/// text is not YAML or a mapping key is not a scalar.
std::vector<nlohmann::json> YamlDocumentsToJson(const std::string& text);

/// The one document of `text` (throws when there is not exactly one).
nlohmann::json YamlToJson(const std::string& text);

}  // namespace hetrun::testing

// Deterministic block-style YAML from an ordered JSON document (keys keep their insertion order).
// Strings that YAML could read as anything but the same string are double-quoted.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hetrun::plan {

/// The document as YAML; each line of `header` (if any) is written first as a "# " comment.
std::string ToYaml(const nlohmann::ordered_json& document, std::string_view header = "");

/// A scalar string as YAML writes it: plain when that reads back as the same string, else quoted.
std::string YamlString(std::string_view text);

}  // namespace hetrun::plan

#include "yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <regex>
#include <stdexcept>

namespace hetrun::testing {
namespace {

nlohmann::json PlainScalar(const std::string& text) {
  static const std::regex kNull("^(~|null|Null|NULL|)$");
  static const std::regex kBool("^(true|True|TRUE|false|False|FALSE)$");
  static const std::regex kInt("^[-+]?[0-9]+$");
  static const std::regex kFloat(
      "^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\\.(inf|Inf|INF)$|^\\.(nan|"
      "NaN|NAN)$");
  if (std::regex_match(text, kNull)) return nullptr;
  if (std::regex_match(text, kBool)) return text[0] == 't' || text[0] == 'T';
  if (std::regex_match(text, kInt)) {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
      return std::stod(text);
    }
  }
  if (std::regex_match(text, kFloat)) return std::stod(text);
  return text;
}

nlohmann::json Convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted (and literal/folded) scalars "!", plain ones "?".
      if (node.Tag() == "!") return node.Scalar();
      if (node.Tag() == "?" || node.Tag().empty()) return PlainScalar(node.Scalar());
      return node.Scalar();
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) array.push_back(Convert(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) throw std::runtime_error("a mapping key is not a scalar");
        std::string key = entry.first.Scalar();
        if (object.contains(key)) throw std::runtime_error("duplicate mapping key '" + key + "'");
        object[key] = Convert(entry.second);
      }
      return object;
    }
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

}  // namespace

std::vector<nlohmann::json> YamlDocumentsToJson(const std::string& text) {
  std::vector<nlohmann::json> documents;
  try {
    for (const YAML::Node& node : YAML::LoadAll(text)) documents.push_back(Convert(node));
  } catch (const YAML::Exception& error) {
    throw std::runtime_error(std::string("not YAML: ") + error.what());
  }
  return documents;
}

nlohmann::json YamlToJson(const std::string& text) {
  std::vector<nlohmann::json> documents = YamlDocumentsToJson(text);
  if (documents.size() != 1) {
    throw std::runtime_error("expected one YAML document, got " + std::to_string(documents.size()));
  }
  return documents[0];
}

}  // namespace hetrun::testing

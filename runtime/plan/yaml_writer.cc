#include "plan/yaml_writer.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace hetrun::plan {
namespace {

using Json = nlohmann::ordered_json;

// Words YAML 1.1 or 1.2 parsers resolve to null or booleans.
bool IsReservedWord(std::string_view text) {
  static constexpr std::string_view kWords[] = {"y",    "n",     "yes",   "no", "on",  "off",
                                                "true", "false", "null",  "~",  "nan", ".nan",
                                                ".inf", "-.inf", "+.inf", "inf"};
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

// Plain scalars we write: a letter or '_' or '/' first, then letters, digits and _ . / -; never a
// reserved word. Everything else (numbers, "8", "*", "--flag", spaces, ':') is quoted.
bool CanBePlain(std::string_view text) {
  if (text.empty() || IsReservedWord(text)) return false;
  auto first = static_cast<unsigned char>(text[0]);
  if (!std::isalpha(first) && first != '_' && first != '/') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || c == '_' || c == '.' || c == '/' || c == '-';
  });
}

std::string Scalar(const Json& value) {
  if (value.is_string()) return YamlString(value.get_ref<const std::string&>());
  if (value.is_null()) return "null";
  if (value.is_object()) return "{}";
  if (value.is_array()) return "[]";
  // Numbers and booleans: JSON's spelling is YAML's (integers plain, doubles with '.' or 'e').
  return value.dump();
}

bool IsBlock(const Json& value) {
  return (value.is_object() || value.is_array()) && !value.empty();
}

void Write(const Json& value, int indent, std::ostringstream& out);

void WriteMapEntries(const Json& map, int indent, bool first_inline, std::ostringstream& out) {
  bool first = true;
  for (const auto& [key, item] : map.items()) {
    if (!(first && first_inline)) out << std::string(indent, ' ');
    first = false;
    out << YamlString(key) << ":";
    if (IsBlock(item)) {
      out << "\n";
      Write(item, item.is_array() ? indent : indent + 2, out);
    } else {
      out << " " << Scalar(item) << "\n";
    }
  }
}

// Sequences are written at their key's indentation ("tasks:\n- name: x"), kubectl's style.
void Write(const Json& value, int indent, std::ostringstream& out) {
  if (value.is_object()) {
    WriteMapEntries(value, indent, false, out);
    return;
  }
  for (const Json& item : value) {
    out << std::string(indent, ' ') << "-";
    if (item.is_object() && !item.empty()) {
      out << " ";
      WriteMapEntries(item, indent + 2, true, out);
    } else if (item.is_array() && !item.empty()) {
      out << "\n";
      Write(item, indent + 2, out);
    } else {
      out << " " << Scalar(item) << "\n";
    }
  }
}

}  // namespace

std::string YamlString(std::string_view text) {
  if (CanBePlain(text)) return std::string(text);
  // A JSON string literal is a valid YAML double-quoted scalar (YAML's escapes include JSON's).
  return Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ToYaml(const nlohmann::ordered_json& document, std::string_view header) {
  std::ostringstream out;
  std::istringstream lines{std::string(header)};
  for (std::string line; std::getline(lines, line);) {
    out << (line.empty() ? "#" : "# " + line) << "\n";
  }
  if (IsBlock(document)) {
    Write(document, 0, out);
  } else {
    out << Scalar(document) << "\n";
  }
  return out.str();
}

}  // namespace hetrun::plan

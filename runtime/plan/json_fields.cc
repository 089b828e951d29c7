#include "plan/json_fields.h"

#include <cmath>
#include <sstream>

#include "hetrun/base/input_file.h"
#include "hetrun/base/units.h"

namespace hetrun::plan::internal {
namespace {

std::string Describe(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  return Shown(text);
}

}  // namespace

std::string Shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 80) out += "...";
  return out;
}

Status JsonPlace::Error(std::string_view what) const {
  return InvalidArgumentError(source + ": " + path + ": " + std::string(what));
}

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view source) {
  if (text.size() > kMaxJsonInputBytes) {
    return InvalidArgumentError(std::string(source) +
                                ": larger than 16 MiB; not a model or "
                                "cluster file");
  }
  HETRUN_RETURN_IF_ERROR(CheckJsonDepth(text, kMaxJsonDepth, source));
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    // Parse again with exceptions only to learn where it failed; the exception stays here.
    try {
      nlohmann::json again = nlohmann::json::parse(text);
      (void)again;
    } catch (const nlohmann::json::parse_error& error) {
      return InvalidArgumentError(std::string(source) + ": not valid JSON (byte " +
                                  std::to_string(error.byte) + ")");
    } catch (const std::exception&) {
    }
    return InvalidArgumentError(std::string(source) + ": not valid JSON");
  }
  return value;
}

Result<std::string> ReadInputFile(const std::string& path) {
  return ReadRegularFile(path, kMaxJsonInputBytes, "input file");
}

Status CheckObject(const nlohmann::json& object, const JsonPlace& place,
                   const std::vector<std::string_view>& allowed) {
  if (!object.is_object()) return place.Error("must be an object, got " + Describe(object));
  for (const auto& [key, unused] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      std::string list;
      for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
      return place.Key(Shown(key)).Error("unknown key (allowed: " + list + ")");
    }
  }
  return Status::Ok();
}

Result<double> RequiredNumber(const nlohmann::json& object, const JsonPlace& place,
                              std::string_view key, double min, bool min_exclusive) {
  JsonPlace at = place.Key(key);
  auto it = object.find(key);
  if (it == object.end()) return at.Error("missing (a number)");
  if (!it->is_number()) return at.Error("must be a number, got " + Describe(*it));
  double value = it->get<double>();
  if (!std::isfinite(value) || value < min || (min_exclusive && value == min)) {
    std::ostringstream bound;
    bound << (min_exclusive ? "> " : ">= ") << min;
    return at.Error("must be a number " + bound.str() + ", got " + Describe(*it));
  }
  return value;
}

Result<int64_t> RequiredInteger(const nlohmann::json& object, const JsonPlace& place,
                                std::string_view key, int64_t min, int64_t max) {
  JsonPlace at = place.Key(key);
  auto it = object.find(key);
  if (it == object.end()) return at.Error("missing (an integer)");
  std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  bool integral =
      it->is_number_integer() ||
      (it->is_number_float() && std::isfinite(it->get<double>()) &&
       std::floor(it->get<double>()) == it->get<double>() && std::fabs(it->get<double>()) < 9.0e15);
  if (!integral) return at.Error("must be " + range + ", got " + Describe(*it));
  int64_t value = 0;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(max))
      return at.Error("must be " + range + ", got " + Describe(*it));
    value = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    value = it->get<int64_t>();
  } else {
    value = static_cast<int64_t>(it->get<double>());
  }
  if (value < min || value > max) return at.Error("must be " + range + ", got " + Describe(*it));
  return value;
}

Result<int64_t> IntegerOr(const nlohmann::json& object, const JsonPlace& place,
                          std::string_view key, int64_t fallback, int64_t min, int64_t max) {
  if (!object.contains(key)) return fallback;
  return RequiredInteger(object, place, key, min, max);
}

Result<std::string> RequiredString(const nlohmann::json& object, const JsonPlace& place,
                                   std::string_view key) {
  JsonPlace at = place.Key(key);
  auto it = object.find(key);
  if (it == object.end()) return at.Error("missing (a string)");
  if (!it->is_string()) return at.Error("must be a string, got " + Describe(*it));
  const std::string& value = it->get_ref<const std::string&>();
  if (value.empty()) return at.Error("must not be empty");
  return value;
}

Result<std::optional<std::string>> OptionalString(const nlohmann::json& object,
                                                  const JsonPlace& place, std::string_view key) {
  if (!object.contains(key)) return std::optional<std::string>();
  HETRUN_ASSIGN_OR_RETURN(std::string value, RequiredString(object, place, key));
  return std::optional<std::string>(std::move(value));
}

Result<std::optional<double>> OptionalBytes(const nlohmann::json& object, const JsonPlace& place,
                                            std::string_view key) {
  auto it = object.find(key);
  if (it == object.end()) return std::optional<double>();
  JsonPlace at = place.Key(key);
  if (it->is_string()) {
    auto bytes = ParseBytes(it->get_ref<const std::string&>());
    if (!bytes.ok()) return at.Error(bytes.status().message());
    if (*bytes == 0) return at.Error("must be > 0 bytes");
    return std::optional<double>(static_cast<double>(*bytes));
  }
  HETRUN_ASSIGN_OR_RETURN(double value, RequiredNumber(object, place, key, 0, true));
  return std::optional<double>(value);
}

}  // namespace hetrun::plan::internal

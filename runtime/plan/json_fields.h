// Reading typed fields from a parsed JSON input file with errors that name the file and the JSON
// path ("cluster.json: $.stages[2].count: must be an integer >= 1, got -1"). Internal to plan/.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::plan::internal {

/// Where a value is: the file and its JSON path.
struct JsonPlace {
  std::string source;
  std::string path;  ///< "$", "$.layers[1]", "$.layers[1].cost"

  JsonPlace Key(std::string_view key) const { return {source, path + "." + std::string(key)}; }
  JsonPlace Index(size_t index) const { return {source, path + "[" + std::to_string(index) + "]"}; }
  Status Error(std::string_view what) const;
};

/// Parses `text` as one JSON value; a syntax error names the file and byte offset.
Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view source);

/// Reads a whole file (kNotFound / kInvalidArgument naming it); larger than 16 MiB is an error.
Result<std::string> ReadInputFile(const std::string& path);

/// Checks that `object` (at `place`) is an object whose keys are all in `allowed`.
Status CheckObject(const nlohmann::json& object, const JsonPlace& place,
                   const std::vector<std::string_view>& allowed);

/// A required or optional member of an object, typed. `min` bounds are inclusive.
Result<double> RequiredNumber(const nlohmann::json& object, const JsonPlace& place,
                              std::string_view key, double min, bool min_exclusive);
Result<int64_t> IntegerOr(const nlohmann::json& object, const JsonPlace& place,
                          std::string_view key, int64_t fallback, int64_t min, int64_t max);
Result<int64_t> RequiredInteger(const nlohmann::json& object, const JsonPlace& place,
                                std::string_view key, int64_t min, int64_t max);
Result<std::string> RequiredString(const nlohmann::json& object, const JsonPlace& place,
                                   std::string_view key);
Result<std::optional<std::string>> OptionalString(const nlohmann::json& object,
                                                  const JsonPlace& place, std::string_view key);

/// A byte count: a number (> 0) or a size string ("80GiB"); nullopt when absent.
Result<std::optional<double>> OptionalBytes(const nlohmann::json& object, const JsonPlace& place,
                                            std::string_view key);

/// Text shown in messages: printable ASCII, at most 80 characters.
std::string Shown(std::string_view text);

}  // namespace hetrun::plan::internal

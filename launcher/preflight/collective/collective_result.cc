#include "preflight/collective/collective_result.h"

#include <string>

namespace hetrun::launcher {
namespace {

using Json = nlohmann::json;

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError(field + " " + what);
}

/// `field` of `object`, when present, must satisfy `ok`.
template <typename Ok>
Status Optional(const Json& object, const std::string& path, const char* field, Ok ok,
                const char* what) {
  if (!object.contains(field) || ok(object.at(field))) return Status::Ok();
  return Bad(path + "." + field, what);
}

bool IsInt(const Json& v) {
  return v.is_number_integer();
}
bool IsNumber(const Json& v) {
  return v.is_number();
}
bool IsNumberOrNull(const Json& v) {
  return v.is_number() || v.is_null();
}
bool IsString(const Json& v) {
  return v.is_string();
}

Status CheckRank(const Json& entry, const std::string& path, int world_size) {
  if (!entry.contains("rank") || !IsInt(entry.at("rank"))) {
    return Bad(path + ".rank", "is not an integer");
  }
  const int64_t rank = entry.at("rank").get<int64_t>();
  if (rank < 0 || rank >= world_size) {
    return Bad(path + ".rank", std::to_string(rank) + " is not a rank of the job (world size " +
                                   std::to_string(world_size) + ")");
  }
  HETRUN_RETURN_IF_ERROR(Optional(entry, path, "node", IsInt, "is not an integer"));
  return Optional(entry, path, "family", IsString, "is not a string");
}

Status CheckWrongEntry(const Json& w, const std::string& path, int world_size) {
  if (!w.is_object()) return Bad(path, "is not an object");
  if (!w.contains("op") || !w.at("op").is_string() ||
      (w.at("op") != "all_reduce" && w.at("op") != "all_gather")) {
    return Bad(path + ".op", "is not all_reduce or all_gather");
  }
  if (!w.contains("bytes") || !IsInt(w.at("bytes")))
    return Bad(path + ".bytes", "is not an integer");
  HETRUN_RETURN_IF_ERROR(CheckRank(w, path, world_size));
  for (const char* field : {"element", "wrong_elements", "from_rank"}) {
    HETRUN_RETURN_IF_ERROR(Optional(w, path, field, IsInt, "is not an integer"));
  }
  for (const char* field : {"expected", "got"}) {
    HETRUN_RETURN_IF_ERROR(Optional(w, path, field, IsNumber, "is not a number"));
  }
  return Status::Ok();
}

Status CheckWrong(const Json& result, int world_size) {
  if (!result.contains("wrong")) return Status::Ok();
  const Json& wrong = result.at("wrong");
  if (!wrong.is_array()) return Bad("wrong", "is not a list");
  for (size_t i = 0; i < wrong.size(); ++i) {
    HETRUN_RETURN_IF_ERROR(
        CheckWrongEntry(wrong[i], "wrong[" + std::to_string(i) + "]", world_size));
  }
  HETRUN_RETURN_IF_ERROR(Optional(result, "result", "wrong_total", IsInt, "is not an integer"));
  if (result.contains("wrong_ranks")) {
    const Json& ranks = result.at("wrong_ranks");
    if (!ranks.is_array()) return Bad("wrong_ranks", "is not a list");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const std::string path = "wrong_ranks[" + std::to_string(i) + "]";
      if (!ranks[i].is_object()) return Bad(path, "is not an object");
      HETRUN_RETURN_IF_ERROR(CheckRank(ranks[i], path, world_size));
    }
  }
  if (result.contains("wrong_sizes")) {
    const Json& sizes = result.at("wrong_sizes");
    if (!sizes.is_object()) return Bad("wrong_sizes", "is not an object");
    for (const auto& [op, list] : sizes.items()) {
      if (!list.is_array()) return Bad("wrong_sizes." + op, "is not a list");
      for (const Json& bytes : list) {
        if (!IsInt(bytes)) return Bad("wrong_sizes." + op, "holds a size that is not an integer");
      }
    }
  }
  return Status::Ok();
}

Status CheckBandwidth(const Json& result) {
  if (!result.contains("bandwidth")) return Status::Ok();
  const Json& b = result.at("bandwidth");
  if (!b.is_object()) return Bad("bandwidth", "is not an object");
  HETRUN_RETURN_IF_ERROR(Optional(b, "bandwidth", "bytes", IsInt, "is not an integer"));
  HETRUN_RETURN_IF_ERROR(Optional(b, "bandwidth", "iterations", IsInt, "is not an integer"));
  HETRUN_RETURN_IF_ERROR(
      Optional(b, "bandwidth", "job_all_reduce_gb_per_s", IsNumberOrNull, "is not a number"));
  for (const auto& [list, figure, ints] :
       {std::tuple{"stages", "all_reduce_gb_per_s", std::vector<const char*>{"stage"}},
        std::tuple{"boundaries", "p2p_gb_per_s",
                   std::vector<const char*>{"from_stage", "to_stage"}}}) {
    if (!b.contains(list)) continue;
    if (!b.at(list).is_array()) return Bad(std::string("bandwidth.") + list, "is not a list");
    for (size_t i = 0; i < b.at(list).size(); ++i) {
      const Json& e = b.at(list)[i];
      const std::string path = std::string("bandwidth.") + list + "[" + std::to_string(i) + "]";
      if (!e.is_object()) return Bad(path, "is not an object");
      for (const char* field : ints) {
        HETRUN_RETURN_IF_ERROR(Optional(e, path, field, IsInt, "is not an integer"));
      }
      HETRUN_RETURN_IF_ERROR(Optional(e, path, figure, IsNumberOrNull, "is not a number"));
    }
  }
  return Status::Ok();
}

}  // namespace

size_t CollectiveResultLimit(int world_size) {
  return (size_t{256} << 10) + (size_t{1} << 10) * static_cast<size_t>(std::max(world_size, 1));
}

Status CheckCollectiveResult(const Json& result, int world_size) {
  if (!result.is_object()) return Bad("the result", "is not a JSON object");
  for (const char* field : {"backend", "error", "cannot_run"}) {
    HETRUN_RETURN_IF_ERROR(Optional(result, "result", field, IsString, "is not a string"));
  }
  HETRUN_RETURN_IF_ERROR(Optional(result, "result", "world_size", IsInt, "is not an integer"));
  HETRUN_RETURN_IF_ERROR(Optional(
      result, "result", "fragment", [](const Json& v) { return v.is_object(); },
      "is not an object"));
  HETRUN_RETURN_IF_ERROR(CheckWrong(result, world_size));
  return CheckBandwidth(result);
}

}  // namespace hetrun::launcher

#include "hetrun/plan/cluster_spec.h"

#include <algorithm>
#include <cmath>

#include "hetrun/base/nearest_name.h"
#include "hetrun/job/gpu_model.h"
#include "plan/json_fields.h"

namespace hetrun::plan {

using internal::JsonPlace;

namespace {

// Label values: at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends (Kubernetes).
bool IsLabelValue(std::string_view value) {
  if (value.empty() || value.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(value.front()) || !alnum(value.back())) return false;
  return std::all_of(value.begin(), value.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// Label keys: an optional DNS-subdomain prefix and '/', then a name like a label value.
bool IsLabelKey(std::string_view key) {
  size_t slash = key.rfind('/');
  std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (!IsLabelValue(name)) return false;
  if (slash == std::string_view::npos) return true;
  std::string_view prefix = key.substr(0, slash);
  if (prefix.empty() || prefix.size() > 253) return false;
  return std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

Status ParseFamilySpeeds(const nlohmann::json& root, const JsonPlace& place,
                         std::map<std::string, double>* speeds, const char* key = "family_speed",
                         const char* what = "family") {
  auto it = root.find(key);
  if (it == root.end()) return Status::Ok();
  JsonPlace at = place.Key(key);
  if (!it->is_object()) return at.Error(std::string("must be an object of ") + what + ": speed");
  for (const auto& [family, unused] : it->items()) {
    if (!IsLabelValue(family)) {
      return at.Key(internal::Shown(family))
          .Error(std::string("not a valid label value for a GPU ") + what);
    }
    HETRUN_ASSIGN_OR_RETURN(double speed, internal::RequiredNumber(*it, at, family, 0, true));
    (*speeds)[family] = speed;
  }
  return Status::Ok();
}

// network_tier / network_mode: Volcano's networkTopology (HyperNode tiers start at 1).
Status ParseNetworkTopology(const nlohmann::json& root, const JsonPlace& place,
                            ClusterSpec* cluster) {
  if (root.contains("network_tier")) {
    HETRUN_ASSIGN_OR_RETURN(int64_t tier,
                            internal::RequiredInteger(root, place, "network_tier", 1, 64));
    cluster->network_tier = tier;
  }
  HETRUN_ASSIGN_OR_RETURN(auto mode, internal::OptionalString(root, place, "network_mode"));
  if (!mode) return Status::Ok();
  if (*mode != "hard" && *mode != "soft") {
    return place.Key("network_mode")
        .Error("'" + internal::Shown(*mode) + "' is not one of hard, soft");
  }
  if (!cluster->network_tier) {
    return place.Key("network_mode")
        .Error("needs $.network_tier (the highest HyperNode tier the job may span)");
  }
  cluster->network_mode = *mode;
  return Status::Ok();
}

Status ParseJobSettings(const nlohmann::json& root, const JsonPlace& place, ClusterSpec* cluster) {
  HETRUN_ASSIGN_OR_RETURN(auto job_name, internal::OptionalString(root, place, "job_name"));
  if (job_name) {
    if (!IsDnsLabel(*job_name)) {
      return place.Key("job_name").Error("must be an RFC 1123 label (lower-case, digits, '-')");
    }
    cluster->job_name = *job_name;
  }
  HETRUN_ASSIGN_OR_RETURN(auto ns, internal::OptionalString(root, place, "namespace"));
  if (ns) {
    if (!IsDnsLabel(*ns)) return place.Key("namespace").Error("must be an RFC 1123 label");
    cluster->namespace_name = *ns;
  }
  HETRUN_ASSIGN_OR_RETURN(auto queue, internal::OptionalString(root, place, "queue"));
  if (queue) cluster->queue = *queue;
  HETRUN_ASSIGN_OR_RETURN(auto image, internal::OptionalString(root, place, "image"));
  if (image) cluster->image = *image;
  HETRUN_ASSIGN_OR_RETURN(cluster->gpus_per_pod,
                          internal::IntegerOr(root, place, "gpus_per_pod", 8, 0, 1024));
  HETRUN_RETURN_IF_ERROR(ParseNetworkTopology(root, place, cluster));
  if (auto it = root.find("command"); it != root.end()) {
    JsonPlace at = place.Key("command");
    if (!it->is_array() || it->empty()) return at.Error("must be a non-empty list of strings");
    cluster->command.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) return at.Index(i).Error("must be a string");
      cluster->command.push_back((*it)[i].get<std::string>());
    }
  }
  return Status::Ok();
}

using LinkTable = std::vector<std::pair<std::string, double>>;

// `network` or `nvlink` of `object`: a name of `table` or a number of GB/s; `fallback` when absent.
Result<std::optional<Link>> ParseLink(const nlohmann::json& object, const JsonPlace& place,
                                      std::string_view key, const LinkTable& table,
                                      const std::optional<Link>& fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  JsonPlace at = place.Key(key);
  if (it->is_number()) {
    HETRUN_ASSIGN_OR_RETURN(double gb_per_s, internal::RequiredNumber(object, place, key, 0, true));
    return std::optional<Link>(LinkFromNumber(gb_per_s));
  }
  std::vector<std::string> names;
  for (const auto& [name, unused] : table) names.push_back(name);
  std::string known;
  for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
  if (!it->is_string()) {
    return at.Error("must be a link name (" + known + ") or a number of GB/s per direction");
  }
  const std::string& name = it->get_ref<const std::string&>();
  Link link = LinkByName(table, name);
  if (link.gb_per_s > 0) return std::optional<Link>(link);
  std::string nearest = NearestName(name, names, 3);
  return at.Error("unknown link '" + internal::Shown(name) + "'" +
                  (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") +
                  "; known: " + known + ", or a number of GB/s per direction");
}

}  // namespace

bool IsDnsLabel(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(name.front()) || !lower_alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return lower_alnum(c) || c == '-'; });
}

std::map<std::string, double> DefaultFamilySpeeds() {
  return {{"ampere", 1.0}, {"hopper", 3.17}};
}

std::map<std::string, double> DefaultModelSpeeds() {
  std::map<std::string, double> speeds;
  const GpuModelSpec* a100 = FindGpuModel("a100-sxm4-80gb");
  for (const GpuModelSpec& m : KnownGpuModels()) {
    speeds[std::string(m.id)] = m.bf16_dense_tflops / a100->bf16_dense_tflops;
  }
  return speeds;
}

std::vector<std::string> ClusterSpec::TaskOrder() const {
  std::vector<std::string> order;
  for (const StageSlot& slot : stages) {
    if (std::find(order.begin(), order.end(), slot.task) == order.end()) order.push_back(slot.task);
  }
  return order;
}

namespace {

// What the stage entries have said so far: one family and one GPU count per task, and the
// stages of each task (the next stage's VC_TASK_INDEX).
struct TaskBook {
  std::map<std::string, std::string> family_of_task;
  std::map<std::string, std::string> model_of_task;
  std::map<std::string, int64_t> replicas;
  std::map<std::string, int64_t> gpus_of_task;
};

// What a stage entry runs on: its family (the node selector's value), its model when named,
// and the speed: the model's when named, else the family's.
struct StageKind {
  std::string family;
  std::string model;
  double speed = 0;
};

std::string Known(const std::map<std::string, double>& speeds) {
  std::string known;
  for (const auto& [name, unused] : speeds) known += (known.empty() ? "" : ", ") + name;
  return known;
}

Result<StageKind> StageKindOf(const nlohmann::json& entry, const JsonPlace& at,
                              const ClusterSpec& cluster) {
  StageKind kind;
  HETRUN_ASSIGN_OR_RETURN(auto family, internal::OptionalString(entry, at, "family"));
  HETRUN_ASSIGN_OR_RETURN(auto model, internal::OptionalString(entry, at, "model"));
  if (!family && !model) return at.Key("family").Error("missing (name a family or a model)");
  if (model) {
    auto speed = cluster.model_speed.find(*model);
    if (speed == cluster.model_speed.end()) {
      return at.Key("model").Error("unknown GPU model '" + internal::Shown(*model) + "' (known: " +
                                   Known(cluster.model_speed) + "; add it to $.model_speed)");
    }
    const GpuModelSpec* spec = FindGpuModel(*model);
    if (spec == nullptr && !family) {
      return at.Key("family").Error("missing: model '" + internal::Shown(*model) +
                                    "' is not in hetrun's table, so name its family");
    }
    if (spec != nullptr && family && *family != spec->family) {
      return at.Key("family").Error("'" + internal::Shown(*family) + "' but model '" + *model +
                                    "' is " + std::string(spec->family));
    }
    kind.model = *model;
    kind.family = family ? *family : std::string(spec->family);
    kind.speed = speed->second;
    return kind;
  }
  auto speed = cluster.family_speed.find(*family);
  if (speed == cluster.family_speed.end()) {
    return at.Key("family").Error("unknown GPU family '" + internal::Shown(*family) + "' (known: " +
                                  Known(cluster.family_speed) + "; add it to $.family_speed)");
  }
  kind.family = *family;
  kind.speed = speed->second;
  return kind;
}

// One entry of $.stages, expanded into `count` stages appended to cluster->stages.
Status ParseStageEntry(const nlohmann::json& entry, const JsonPlace& at,
                       const std::optional<Link>& default_network,
                       const std::optional<Link>& default_nvlink, TaskBook* book,
                       ClusterSpec* cluster) {
  HETRUN_RETURN_IF_ERROR(internal::CheckObject(
      entry, at,
      {"task", "family", "model", "count", "memory_bytes", "gpus", "network", "nvlink"}));
  HETRUN_ASSIGN_OR_RETURN(std::string task, internal::RequiredString(entry, at, "task"));
  if (!IsDnsLabel(task)) {
    return at.Key("task").Error("'" + internal::Shown(task) +
                                "' is not an RFC 1123 label (lower-case letters, digits, '-', "
                                "at most 63), as Volcano requires of task names");
  }
  HETRUN_ASSIGN_OR_RETURN(StageKind kind, StageKindOf(entry, at, *cluster));
  const std::string& family = kind.family;
  auto [previous, inserted] = book->family_of_task.emplace(task, family);
  if (!inserted && previous->second != family) {
    return at.Key("family").Error("task '" + task + "' is on family '" + previous->second +
                                  "' in an earlier entry; one task has one node selector");
  }
  auto [named, first_model] = book->model_of_task.emplace(task, kind.model);
  if (!first_model && named->second != kind.model) {
    return at.Key("model").Error("task '" + task + "' is on model '" + named->second +
                                 "' in an earlier entry; one task has one pod template");
  }
  HETRUN_ASSIGN_OR_RETURN(int64_t count, internal::IntegerOr(entry, at, "count", 1, 1, kMaxStages));
  HETRUN_ASSIGN_OR_RETURN(
      int64_t gpus,
      internal::IntegerOr(entry, at, "gpus", std::max<int64_t>(cluster->gpus_per_pod, 1), 1, 1024));
  auto [earlier, first_entry] = book->gpus_of_task.emplace(task, gpus);
  if (!first_entry && earlier->second != gpus) {
    return at.Key("gpus").Error("task '" + task + "' has " + std::to_string(earlier->second) +
                                " GPUs per stage in an earlier entry; one task has one pod "
                                "template");
  }
  HETRUN_ASSIGN_OR_RETURN(auto memory, internal::OptionalBytes(entry, at, "memory_bytes"));
  if (!memory) return at.Key("memory_bytes").Error("missing (bytes a stage may hold)");
  if (static_cast<int64_t>(cluster->stages.size()) + count > kMaxStages) {
    return at.Key("count").Error("the cluster expands to more than " + std::to_string(kMaxStages) +
                                 " stages");
  }
  HETRUN_ASSIGN_OR_RETURN(auto network,
                          ParseLink(entry, at, "network", NetworkLinkTable(), default_network));
  HETRUN_ASSIGN_OR_RETURN(auto nvlink,
                          ParseLink(entry, at, "nvlink", NvlinkTable(), default_nvlink));
  for (int64_t k = 0; k < count; ++k) {
    cluster->stages.push_back({task, book->replicas[task]++, family, kind.speed, *memory, gpus,
                               network, nvlink, kind.model});
  }
  return Status::Ok();
}

}  // namespace

Result<ClusterSpec> ParseClusterSpec(std::string_view json_text, std::string_view source) {
  HETRUN_ASSIGN_OR_RETURN(nlohmann::json root, internal::ParseJsonText(json_text, source));
  JsonPlace place{std::string(source), "$"};
  HETRUN_RETURN_IF_ERROR(
      internal::CheckObject(root, place,
                            {"family_speed", "model_speed", "label_key", "memory_ceiling_bytes",
                             "stages", "job_name", "namespace", "queue", "image", "gpus_per_pod",
                             "command", "network", "nvlink", "network_tier", "network_mode"}));
  ClusterSpec cluster;
  cluster.family_speed = DefaultFamilySpeeds();
  HETRUN_RETURN_IF_ERROR(ParseFamilySpeeds(root, place, &cluster.family_speed));
  cluster.model_speed = DefaultModelSpeeds();
  HETRUN_RETURN_IF_ERROR(
      ParseFamilySpeeds(root, place, &cluster.model_speed, "model_speed", "model"));
  HETRUN_ASSIGN_OR_RETURN(auto label_key, internal::OptionalString(root, place, "label_key"));
  if (label_key) {
    if (!IsLabelKey(*label_key)) {
      return place.Key("label_key")
          .Error("not a valid Kubernetes label key: '" + internal::Shown(*label_key) + "'");
    }
    cluster.label_key = *label_key;
  }
  HETRUN_ASSIGN_OR_RETURN(cluster.memory_ceiling_bytes,
                          internal::OptionalBytes(root, place, "memory_ceiling_bytes"));
  HETRUN_RETURN_IF_ERROR(ParseJobSettings(root, place, &cluster));
  HETRUN_ASSIGN_OR_RETURN(std::optional<Link> default_network,
                          ParseLink(root, place, "network", NetworkLinkTable(), std::nullopt));
  HETRUN_ASSIGN_OR_RETURN(std::optional<Link> default_nvlink,
                          ParseLink(root, place, "nvlink", NvlinkTable(), std::nullopt));

  JsonPlace stages_at = place.Key("stages");
  auto stages = root.find("stages");
  if (stages == root.end()) return stages_at.Error("missing (a list of stage groups)");
  if (!stages->is_array() || stages->empty()) {
    return stages_at.Error("must be a non-empty list of stage groups");
  }
  TaskBook book;
  for (size_t i = 0; i < stages->size(); ++i) {
    HETRUN_RETURN_IF_ERROR(ParseStageEntry((*stages)[i], stages_at.Index(i), default_network,
                                           default_nvlink, &book, &cluster));
  }
  return cluster;
}

Result<ClusterSpec> LoadClusterSpec(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(std::string text, internal::ReadInputFile(path));
  return ParseClusterSpec(text, path);
}

}  // namespace hetrun::plan

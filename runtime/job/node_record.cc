#include "hetrun/job/node_record.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "hetrun/base/units.h"
#include "hetrun/job/gpu_model.h"

namespace hetrun {
namespace {

using nlohmann::json;

constexpr int kSchema = 1;

std::string Excerpt(std::string_view text) {
  std::string out(text.substr(0, 120));
  if (text.size() > 120) out += "...";
  return out;
}

json GpuToJson(const GpuInfo& gpu) {
  return json{{"name", gpu.name},
              {"capability", gpu.CapabilityString()},
              {"total_bytes", gpu.total_bytes},
              {"usable_bytes", gpu.usable_bytes},
              {"family", gpu.family},
              {"model", gpu.model}};
}

// A missing or mistyped key still throws json's exception (DecodeNodeRecord catches it); a
// capability that is not MAJOR.MINOR is an error value.
Result<GpuInfo> GpuFromJson(const json& j) {
  GpuInfo gpu;
  gpu.name = j.at("name").get<std::string>();
  std::string cc = j.at("capability").get<std::string>();
  size_t dot = cc.find('.');
  Result<int64_t> major = ParseIntInRange(cc.substr(0, dot), 0, 99);
  Result<int64_t> minor = dot == std::string::npos ? InvalidArgumentError("no minor version")
                                                   : ParseIntInRange(cc.substr(dot + 1), 0, 99);
  if (!major.ok() || !minor.ok()) {
    return InvalidArgumentError("GPU '" + Excerpt(gpu.name) + "': capability '" + Excerpt(cc) +
                                "' is not MAJOR.MINOR");
  }
  gpu.major = static_cast<int>(*major);
  gpu.minor = static_cast<int>(*minor);
  gpu.total_bytes = j.at("total_bytes").get<uint64_t>();
  gpu.usable_bytes = j.at("usable_bytes").get<uint64_t>();
  gpu.family = j.at("family").get<std::string>();
  // The model (gpu_model.h); a record without one names its GPU's model from the name.
  gpu.model = j.contains("model") ? j.at("model").get<std::string>()
                                  : NormalizeGpuModel(gpu.name, gpu.total_bytes);
  return gpu;
}

json RowsToJson(const std::vector<ArchRow>& rows) {
  json out = json::array();
  for (const ArchRow& row : rows) {
    out.push_back({{"target", row.target},
                   {"file", row.file},
                   {"verdict", row.verdict},
                   {"fails", row.fails}});
  }
  return out;
}

std::vector<ArchRow> RowsFromJson(const json& j) {
  std::vector<ArchRow> rows;
  for (const json& row : j) {
    rows.push_back({row.at("target").get<std::string>(), row.at("file").get<std::string>(),
                    row.at("verdict").get<std::string>(), row.at("fails").get<bool>()});
  }
  return rows;
}

// Capability strings sort numerically: "8.0" < "9.0" < "10.0".
bool CapabilityLess(const std::string& a, const std::string& b) {
  auto key = [](const std::string& cc) {
    size_t dot = cc.find('.');
    return std::make_pair(std::atoi(cc.substr(0, dot).c_str()),
                          dot == std::string::npos ? 0 : std::atoi(cc.c_str() + dot + 1));
  };
  return key(a) < key(b);
}

}  // namespace

std::string NodeLabel(const NodeRecord& record) {
  std::string label = "node " + std::to_string(record.node_rank);
  if (!record.hostname.empty()) label += " (" + record.hostname + ")";
  return label;
}

std::string EncodeNodeRecord(const NodeRecord& record) {
  json gpus = json::array();
  for (const GpuInfo& gpu : record.gpus) gpus.push_back(GpuToJson(gpu));
  json j{{"schema", kSchema},
         {"hostname", record.hostname},
         {"node_rank", record.node_rank},
         {"nnodes", record.nnodes},
         {"world_size", record.world_size},
         {"local_world_size", record.local_world_size},
         {"task", record.task},
         {"instance", record.instance},
         {"hetrun_version", record.hetrun_version},
         {"nccl_version", record.nccl_version},
         {"inventory_source", record.inventory_source},
         {"gpus", gpus},
         {"arch_checked", record.arch_checked},
         {"check_collectives", record.check_collectives},
         {"arch", RowsToJson(record.arch_rows)},
         {"stage", record.stage},
         {"stage_first_layer", record.stage_first_layer},
         {"stage_layers", record.stage_layers},
         {"micro_batches", record.micro_batches},
         {"ranks", record.ranks}};
  if (!record.layout_state.empty()) {
    j["layout_state_path"] = record.layout_state_path;
    j["layout_state"] = record.layout_state;
  }
  return j.dump();
}

Result<NodeRecord> DecodeNodeRecord(std::string_view text) {
  try {
    json j = json::parse(text);
    if (j.at("schema").get<int>() != kSchema) {
      return InvalidArgumentError("node record schema " + j.at("schema").dump() + " is not " +
                                  std::to_string(kSchema) +
                                  " (launchers of different hetrun versions?)");
    }
    NodeRecord record;
    record.hostname = j.at("hostname").get<std::string>();
    record.node_rank = j.at("node_rank").get<int>();
    record.nnodes = j.at("nnodes").get<int>();
    record.world_size = j.at("world_size").get<int>();
    record.local_world_size = j.at("local_world_size").get<int>();
    record.task = j.at("task").get<std::string>();
    record.instance = j.at("instance").get<std::string>();
    record.hetrun_version = j.at("hetrun_version").get<std::string>();
    record.nccl_version = j.at("nccl_version").get<std::string>();
    record.inventory_source = j.at("inventory_source").get<std::string>();
    for (const json& gpu : j.at("gpus")) {
      Result<GpuInfo> info = GpuFromJson(gpu);
      if (!info.ok()) {
        return InvalidArgumentError("malformed node record '" + Excerpt(text) +
                                    "': " + info.status().message());
      }
      record.gpus.push_back(std::move(info).value());
    }
    record.arch_checked = j.at("arch_checked").get<bool>();
    record.check_collectives = j.value("check_collectives", false);
    record.arch_rows = RowsFromJson(j.at("arch"));
    // Optional (older launchers of this schema send none): the pipeline stage entry.
    record.stage = j.value("stage", -1);
    record.stage_first_layer = j.value("stage_first_layer", int64_t{0});
    record.stage_layers = j.value("stage_layers", int64_t{0});
    record.micro_batches = j.value("micro_batches", int64_t{0});
    if (j.contains("ranks")) record.ranks = j.at("ranks").get<std::vector<int>>();
    record.layout_state_path = j.value("layout_state_path", std::string());
    record.layout_state = j.value("layout_state", std::string());
    return record;
  } catch (const std::exception& e) {
    return InvalidArgumentError("malformed node record '" + Excerpt(text) + "': " + e.what());
  }
}

std::string EncodeArchRows(const std::vector<ArchRow>& rows) {
  return RowsToJson(rows).dump();
}

Result<std::vector<ArchRow>> DecodeArchRows(std::string_view text) {
  try {
    return RowsFromJson(json::parse(text));
  } catch (const std::exception& e) {
    return InvalidArgumentError("malformed kernel-image verdicts '" + Excerpt(text) +
                                "': " + e.what());
  }
}

Status CheckSameJob(const NodeRecord& first, const NodeRecord& joining) {
  auto mismatch = [&](std::string_view what, const std::string& a, const std::string& b) {
    return InvalidArgumentError(std::string(what) + " differs between nodes: " + NodeLabel(first) +
                                " has " + a + ", " + NodeLabel(joining) + " has " + b);
  };
  if (first.nnodes != joining.nnodes) {
    return mismatch("number of nodes", std::to_string(first.nnodes),
                    std::to_string(joining.nnodes));
  }
  if (first.world_size != joining.world_size) {
    return mismatch("world size", std::to_string(first.world_size),
                    std::to_string(joining.world_size));
  }
  if (first.check_collectives != joining.check_collectives) {
    auto on = [](bool enabled) { return std::string(enabled ? "it on" : "it off"); };
    return mismatch("--check-collectives (a job-wide setting: every node's probes join one group)",
                    on(first.check_collectives), on(joining.check_collectives));
  }
  if (first.hetrun_version != joining.hetrun_version) {
    return mismatch("hetrun version", first.hetrun_version, joining.hetrun_version);
  }
  if (!first.nccl_version.empty() && !joining.nccl_version.empty() &&
      first.nccl_version != joining.nccl_version) {
    return mismatch("NCCL version (NCCL refuses mixed versions)", first.nccl_version,
                    joining.nccl_version);
  }
  return Status::Ok();
}

Status ValidateJob(std::span<const NodeRecord> records) {
  if (records.empty()) return InvalidArgumentError("no node records");
  std::map<int, const NodeRecord*> by_rank;
  for (const NodeRecord& record : records) {
    auto [it, inserted] = by_rank.emplace(record.node_rank, &record);
    if (!inserted) {
      return InvalidArgumentError("node rank " + std::to_string(record.node_rank) +
                                  " claimed twice: by " + NodeLabel(*it->second) + " [" +
                                  it->second->instance + "] and by " + NodeLabel(record) + " [" +
                                  record.instance + "]");
    }
  }
  const NodeRecord& first = *by_rank.begin()->second;
  for (const NodeRecord& record : records) HETRUN_RETURN_IF_ERROR(CheckSameJob(first, record));
  int nnodes = first.nnodes;
  for (const auto& [rank, record] : by_rank) {
    if (rank < 0 || rank >= nnodes) {
      return InvalidArgumentError(NodeLabel(*record) + " has node rank " + std::to_string(rank) +
                                  ", outside 0.." + std::to_string(nnodes - 1));
    }
  }
  if (static_cast<int>(by_rank.size()) != nnodes) {
    return InvalidArgumentError(std::to_string(by_rank.size()) + " node records for " +
                                std::to_string(nnodes) + " nodes");
  }
  int sum = 0;
  std::string parts;
  for (const auto& [rank, record] : by_rank) {
    sum += record->local_world_size;
    parts += (parts.empty() ? "" : " + ") + std::to_string(record->local_world_size);
  }
  if (sum != first.world_size) {
    return InvalidArgumentError("world size " + std::to_string(first.world_size) +
                                " disagrees with the workers the nodes start: " + parts + " = " +
                                std::to_string(sum));
  }
  return Status::Ok();
}

std::vector<memory::JobGpu> JobGpus(std::span<const NodeRecord> records) {
  std::vector<const NodeRecord*> sorted;
  for (const NodeRecord& record : records) sorted.push_back(&record);
  std::sort(sorted.begin(), sorted.end(),
            [](const NodeRecord* a, const NodeRecord* b) { return a->node_rank < b->node_rank; });
  std::vector<memory::JobGpu> gpus;
  for (const NodeRecord* record : sorted) {
    for (size_t i = 0; i < record->gpus.size(); ++i) {
      gpus.push_back({record->node_rank, record->hostname, static_cast<int>(i), record->gpus[i]});
    }
  }
  return gpus;
}

std::vector<std::string> JobCapabilities(std::span<const NodeRecord> records) {
  std::set<std::string> set;
  for (const NodeRecord& record : records) {
    for (const GpuInfo& gpu : record.gpus) set.insert(gpu.CapabilityString());
  }
  std::vector<std::string> out(set.begin(), set.end());
  std::sort(out.begin(), out.end(), CapabilityLess);
  return out;
}

}  // namespace hetrun

#include "hetrun/pipeline/measurements.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "hetrun/base/atomic_file.h"
#include "hetrun/base/input_file.h"
#include "hetrun/base/units.h"
#include "hetrun/plan/model_spec.h"

namespace hetrun::pipeline {
namespace {

using nlohmann::json;

// Where a value is: the file and its JSON path.
struct Place {
  std::string_view source;
  std::string path;
  Place Key(std::string_view key) const { return {source, path + "." + std::string(key)}; }
  Place Index(size_t i) const { return {source, path + "[" + std::to_string(i) + "]"}; }
  Status Error(const std::string& what) const {
    return InvalidArgumentError(std::string(source) + ": " + path + ": " + what);
  }
};

constexpr int64_t kMaxCount = int64_t{1} << 40;

Result<int64_t> Integer(const json& object, const Place& at, const char* key, int64_t min,
                        std::optional<int64_t> fallback, int64_t max = kMaxCount) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (fallback) return *fallback;
    return at.Key(key).Error("is missing");
  }
  if (!it->is_number_integer() || it->get<int64_t>() < min || it->get<int64_t>() > max ||
      (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max))) {
    return at.Key(key).Error("must be an integer in [" + std::to_string(min) + ", " +
                             (max == kMaxCount ? std::string("2^40") : std::to_string(max)) + "]");
  }
  return it->get<int64_t>();
}

Result<double> Millis(const json& value, const Place& at) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    return at.Error("must be a finite number >= 0");
  }
  return value.get<double>();
}

Result<double> MillisField(const json& object, const Place& at, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return at.Key(key).Error("is missing");
  return Millis(*it, at.Key(key));
}

Result<WindowMeasurement> ParseWindow(const json& entry, const Place& at, int64_t num_layers) {
  if (!entry.is_object()) return at.Error("must be an object");
  WindowMeasurement w;
  HETRUN_ASSIGN_OR_RETURN(w.window, Integer(entry, at, "window", 0, std::nullopt));
  HETRUN_ASSIGN_OR_RETURN(w.revision, Integer(entry, at, "revision", 0, 0));
  HETRUN_ASSIGN_OR_RETURN(w.attempt, Integer(entry, at, "attempt", 0, 0));
  HETRUN_ASSIGN_OR_RETURN(w.first_layer, Integer(entry, at, "first_layer", 0, std::nullopt));
  HETRUN_ASSIGN_OR_RETURN(w.layers, Integer(entry, at, "layers", 1, std::nullopt));
  if (w.first_layer + w.layers > num_layers) {
    return at.Error("layers [" + std::to_string(w.first_layer) + ", " +
                    std::to_string(w.first_layer + w.layers) + ") lie outside the model's " +
                    std::to_string(num_layers) + " layers");
  }
  HETRUN_ASSIGN_OR_RETURN(w.samples, Integer(entry, at, "samples", 0, 0));
  HETRUN_ASSIGN_OR_RETURN(w.micro_batches, Integer(entry, at, "micro_batches", 0, 0));
  HETRUN_ASSIGN_OR_RETURN(w.forward_ms, MillisField(entry, at, "forward_ms"));
  HETRUN_ASSIGN_OR_RETURN(w.backward_ms, MillisField(entry, at, "backward_ms"));
  if (auto ms = entry.find("layer_ms"); ms != entry.end()) {
    if (!ms->is_array() || static_cast<int64_t>(ms->size()) != w.layers) {
      return at.Key("layer_ms")
          .Error("must list one number per layer (" + std::to_string(w.layers) + ")");
    }
    for (size_t l = 0; l < ms->size(); ++l) {
      HETRUN_ASSIGN_OR_RETURN(double v, Millis((*ms)[l], at.Key("layer_ms").Index(l)));
      w.layer_ms.push_back(v);
    }
  }
  return w;
}

// `dropped` null: a bad window fails the rank; else it is left out and named there.
Result<RankMeasurements> ParseRank(const json& entry, const Place& at, int64_t num_layers,
                                   std::vector<std::string>* dropped) {
  if (!entry.is_object()) return at.Error("must be an object");
  RankMeasurements rank;
  HETRUN_ASSIGN_OR_RETURN(int64_t r, Integer(entry, at, "rank", 0, std::nullopt));
  HETRUN_ASSIGN_OR_RETURN(int64_t stage, Integer(entry, at, "stage", 0, std::nullopt));
  HETRUN_ASSIGN_OR_RETURN(int64_t replica, Integer(entry, at, "replica", 0, 0));
  if (r > (1 << 20) || stage > (1 << 20) || replica > (1 << 20)) {
    return at.Error("rank, stage and replica must be below 2^20");
  }
  rank.rank = static_cast<int>(r);
  rank.stage = static_cast<int>(stage);
  rank.replica = static_cast<int>(replica);
  if (auto family = entry.find("family"); family != entry.end()) {
    if (!family->is_string()) return at.Key("family").Error("must be a string");
    rank.family = family->get<std::string>();
  }
  auto windows = entry.find("windows");
  if (windows == entry.end() || !windows->is_array()) {
    return at.Key("windows").Error("must be an array of windows");
  }
  for (size_t w = 0; w < windows->size(); ++w) {
    Result<WindowMeasurement> window =
        ParseWindow((*windows)[w], at.Key("windows").Index(w), num_layers);
    if (!window.ok() && dropped != nullptr) {
      dropped->push_back(window.status().message());
      continue;
    }
    if (!window.ok()) return window.status();
    rank.windows.push_back(std::move(*window));
  }
  return rank;
}

Status ParseModel(const json& root, const Place& at, Measurements& out) {
  HETRUN_ASSIGN_OR_RETURN(out.num_layers,
                          Integer(root, at, "num_layers", 1, std::nullopt, plan::kMaxModelLayers));
  HETRUN_ASSIGN_OR_RETURN(out.micro_batches, Integer(root, at, "micro_batches", 1, 1));
  if (auto names = root.find("layer_names"); names != root.end()) {
    if (!names->is_array() || static_cast<int64_t>(names->size()) != out.num_layers) {
      return at.Key("layer_names")
          .Error("must list one name per layer (" + std::to_string(out.num_layers) + ")");
    }
    for (const json& name : *names) {
      if (!name.is_string()) return at.Key("layer_names").Error("must hold strings");
      out.layer_names.push_back(name.get<std::string>());
    }
  }
  return Status::Ok();
}

json WindowJson(const WindowMeasurement& w) {
  json out = {{"attempt", w.attempt},
              {"window", w.window},
              {"revision", w.revision},
              {"first_layer", w.first_layer},
              {"layers", w.layers},
              {"samples", w.samples},
              {"micro_batches", w.micro_batches},
              {"forward_ms", w.forward_ms},
              {"backward_ms", w.backward_ms}};
  if (!w.layer_ms.empty()) out["layer_ms"] = w.layer_ms;
  return out;
}

bool SameModel(const Measurements& a, const Measurements& b) {
  return a.num_layers == b.num_layers && a.micro_batches == b.micro_batches &&
         (a.layer_names.empty() || b.layer_names.empty() || a.layer_names == b.layer_names);
}

}  // namespace

std::string RankMeasurementsPath(const std::string& run_dir, int rank) {
  return run_dir + "/measurements/rank_" + std::to_string(rank) + ".json";
}

std::string MergedMeasurementsPath(const std::string& run_dir) {
  return run_dir + "/measurements.json";
}

std::string MeasurementsJson(const Measurements& m) {
  json root = {{"version", 1}, {"num_layers", m.num_layers}, {"micro_batches", m.micro_batches}};
  if (!m.layer_names.empty()) root["layer_names"] = m.layer_names;
  json ranks = json::array();
  for (const RankMeasurements& rank : m.ranks) {
    json windows = json::array();
    for (const WindowMeasurement& w : rank.windows) windows.push_back(WindowJson(w));
    ranks.push_back({{"rank", rank.rank},
                     {"stage", rank.stage},
                     {"replica", rank.replica},
                     {"family", rank.family},
                     {"windows", windows}});
  }
  root["ranks"] = ranks;
  return root.dump(1) + "\n";
}

namespace {

Result<Measurements> Parse(std::string_view json_text, std::string_view source,
                           std::vector<std::string>* dropped) {
  HETRUN_RETURN_IF_ERROR(CheckJsonDepth(json_text, kMaxJsonDepth, source));
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Parse again with exceptions only to learn where and why (a number too large for a double
    // is a parse error); the exception stays here.
    std::string why;
    try {
      json again = json::parse(json_text);
      (void)again;
    } catch (const json::parse_error& error) {
      why = " (byte " + std::to_string(error.byte) + ")";
    } catch (const json::exception& error) {  // out_of_range 406: "number overflow parsing '1e999'"
      why = std::string(" (") + error.what() + ")";
    }
    return InvalidArgumentError(std::string(source) + ": not valid JSON" + why);
  }
  const Place top{source, "$"};
  if (!root.is_object()) return top.Error("the measurements are not a JSON object");
  Measurements out;
  HETRUN_RETURN_IF_ERROR(ParseModel(root, top, out));
  auto ranks = root.find("ranks");
  if (ranks == root.end() || !ranks->is_array()) {
    return top.Key("ranks").Error("must be an array of ranks");
  }
  std::set<int> seen;
  for (size_t r = 0; r < ranks->size(); ++r) {
    const Place at = top.Key("ranks").Index(r);
    HETRUN_ASSIGN_OR_RETURN(RankMeasurements rank,
                            ParseRank((*ranks)[r], at, out.num_layers, dropped));
    if (!seen.insert(rank.rank).second) {
      return at.Key("rank").Error("rank " + std::to_string(rank.rank) + " appears twice");
    }
    out.ranks.push_back(std::move(rank));
  }
  return out;
}

}  // namespace

Result<Measurements> ParseMeasurements(std::string_view json_text, std::string_view source) {
  return Parse(json_text, source, nullptr);
}

Result<Measurements> ParseMeasurementsKeepingWindows(std::string_view json_text,
                                                     std::string_view source,
                                                     std::vector<std::string>& dropped) {
  return Parse(json_text, source, &dropped);
}

Result<Measurements> LoadMeasurements(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(std::string text,
                          ReadRegularFile(path, kMaxJsonInputBytes, "measurements file"));
  return ParseMeasurements(text, path);
}

Result<Measurements> LoadMeasurementsKeepingWindows(const std::string& path,
                                                    std::vector<std::string>& dropped) {
  HETRUN_ASSIGN_OR_RETURN(std::string text,
                          ReadRegularFile(path, kMaxJsonInputBytes, "measurements file"));
  return ParseMeasurementsKeepingWindows(text, path, dropped);
}

Result<Measurements> MergeMeasurements(std::span<const Measurements> parts,
                                       std::span<const std::string> names,
                                       std::vector<std::string>& skipped) {
  auto name = [&](size_t i) { return i < names.size() ? names[i] : "part " + std::to_string(i); };
  std::optional<Measurements> merged;
  std::set<int> seen;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Measurements& part = parts[i];
    if (merged && !SameModel(*merged, part)) {
      skipped.push_back(name(i) + ": another model (" + std::to_string(part.num_layers) +
                        " layers, " + std::to_string(part.micro_batches) + " micro-batches vs " +
                        std::to_string(merged->num_layers) + " and " +
                        std::to_string(merged->micro_batches) + ", or other layer names)");
      continue;
    }
    bool repeats = false;
    for (const RankMeasurements& rank : part.ranks) repeats = repeats || seen.contains(rank.rank);
    if (repeats) {
      skipped.push_back(name(i) + ": repeats a rank already merged");
      continue;
    }
    if (!merged) merged = Measurements{part.num_layers, part.layer_names, part.micro_batches, {}};
    if (merged->layer_names.empty()) merged->layer_names = part.layer_names;
    for (const RankMeasurements& rank : part.ranks) {
      seen.insert(rank.rank);
      merged->ranks.push_back(rank);
    }
  }
  if (!merged) return InvalidArgumentError("no measurements to merge");
  std::sort(merged->ranks.begin(), merged->ranks.end(),
            [](const RankMeasurements& a, const RankMeasurements& b) { return a.rank < b.rank; });
  return *merged;
}

std::vector<std::vector<StageMeasurement>> StageWindows(const Measurements& measurements,
                                                        std::vector<std::string>* families) {
  // (attempt, window, revision) -> stage -> slowest replica's measurement.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::map<int, StageMeasurement>> grouped;
  std::map<int, std::set<std::string>> stage_families;
  for (const RankMeasurements& rank : measurements.ranks) {
    stage_families[rank.stage].insert(rank.family.empty() ? "unknown" : rank.family);
    for (const WindowMeasurement& w : rank.windows) {
      StageMeasurement m{w.first_layer, w.layers, w.forward_ms, w.backward_ms, w.layer_ms};
      auto [it, fresh] = grouped[{w.attempt, w.window, w.revision}].try_emplace(rank.stage, m);
      const StageMeasurement& held = it->second;
      if (!fresh && m.forward_ms + m.backward_ms > held.forward_ms + held.backward_ms) {
        it->second = m;
      }
    }
  }
  const int stages = stage_families.empty() ? 0 : stage_families.rbegin()->first + 1;
  std::vector<std::vector<StageMeasurement>> windows;
  for (const auto& [key, by_stage] : grouped) {
    if (static_cast<int>(by_stage.size()) != stages) continue;
    std::vector<StageMeasurement> window;
    std::vector<int64_t> counts;
    for (const auto& [stage, m] : by_stage) {
      window.push_back(m);
      counts.push_back(m.layers);
    }
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    if (total != measurements.num_layers || !CheckWindow(window, counts).ok()) continue;
    windows.push_back(std::move(window));
  }
  if (families) {
    families->assign(static_cast<size_t>(stages), "");
    for (const auto& [stage, names] : stage_families) {
      for (const std::string& n : names) {
        std::string& f = (*families)[static_cast<size_t>(stage)];
        f += (f.empty() ? "" : "+") + n;
      }
    }
  }
  return windows;
}

namespace {

// The windows of earlier attempts that `path` holds for `rank`, when it is a file of the same
// model written for the same rank, stage and replica; none otherwise.
std::vector<WindowMeasurement> EarlierWindows(const std::string& path, const Measurements& model,
                                              const RankMeasurements& rank, int64_t attempt) {
  std::vector<WindowMeasurement> kept;
  if (path.empty() || attempt == 0) return kept;
  std::vector<std::string> dropped;  // a window the reader refuses costs only that window
  Result<Measurements> earlier = LoadMeasurementsKeepingWindows(path, dropped);
  if (!earlier.ok() || !SameModel(*earlier, model) || earlier->ranks.size() != 1) return kept;
  const RankMeasurements& mine = earlier->ranks.front();
  if (mine.rank != rank.rank || mine.stage != rank.stage || mine.replica != rank.replica) {
    return kept;
  }
  for (const WindowMeasurement& w : mine.windows) {
    if (w.attempt < attempt) kept.push_back(w);
  }
  return kept;
}

}  // namespace

Result<MeasurementLog> MeasurementLog::Create(const JobLayout& layout, int rank, std::string path,
                                              int64_t attempt) {
  const int stage = layout.StageOf(rank);
  if (stage < 0) {
    return InvalidArgumentError("measurement log: rank " + std::to_string(rank) +
                                " is in no stage of the layout (" +
                                std::to_string(layout.world_size()) + " ranks)");
  }
  if (attempt < 0) {
    return InvalidArgumentError("measurement log: attempt must be >= 0, got " +
                                std::to_string(attempt));
  }
  MeasurementLog log;
  log.data_.num_layers = layout.num_layers;
  log.data_.layer_names = layout.layer_names;
  log.data_.micro_batches = layout.micro_batches;
  const int replica = layout.ReplicaOf(rank);
  const StageLayout& entry = layout.stages[static_cast<size_t>(stage)];
  log.data_.ranks.push_back(
      {rank, stage, replica, entry.families[static_cast<size_t>(replica)], {}});
  log.data_.ranks.front().windows =
      EarlierWindows(path, log.data_, log.data_.ranks.front(), attempt);
  log.path_ = std::move(path);
  log.attempt_ = attempt;
  return log;
}

Result<MeasurementLog> MeasurementLog::FromEnvironment(const Environment& env,
                                                       const JobLayout& layout, int rank) {
  int64_t attempt = 0;
  if (std::optional<std::string> count = env.Get("TORCHELASTIC_RESTART_COUNT")) {
    Result<int64_t> parsed = ParseIntInRange(*count, 0, kMaxCount);
    if (!parsed.ok()) {
      return parsed.status().WithContext("TORCHELASTIC_RESTART_COUNT=" + *count);
    }
    attempt = *parsed;
  }
  std::optional<std::string> run_dir = env.Get("HETRUN_RUN_DIR");
  return Create(layout, rank,
                run_dir && !run_dir->empty() ? RankMeasurementsPath(*run_dir, rank) : "", attempt);
}

Status MeasurementLog::Append(const WindowMeasurement& window) {
  bool finite = std::isfinite(window.forward_ms) && std::isfinite(window.backward_ms) &&
                window.forward_ms >= 0 && window.backward_ms >= 0;
  for (double ms : window.layer_ms) finite = finite && std::isfinite(ms) && ms >= 0;
  if (!finite) {
    return InvalidArgumentError("measurement of window " + std::to_string(window.window) +
                                ": times must be finite and >= 0");
  }
  WindowMeasurement stamped = window;
  stamped.attempt = attempt_;
  // Exactly what the reader accepts: the window as it will be written, read back.
  const std::string source = "measurement of window " + std::to_string(window.window);
  const Place at{source, "$"};
  Result<WindowMeasurement> readable = ParseWindow(WindowJson(stamped), at, data_.num_layers);
  if (!readable.ok()) return readable.status();
  std::vector<WindowMeasurement>& windows = data_.ranks.front().windows;
  windows.push_back(std::move(stamped));
  if (windows.size() > kMaxMeasuredWindows) windows.erase(windows.begin());
  if (path_.empty()) return Status::Ok();
  const std::string dir = path_.substr(0, path_.rfind('/'));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    Status error = ErrnoError("mkdir", dir, errno).WithContext("measurements");
    path_.clear();
    return error;
  }
  Status written = WriteFileAtomically(path_, MeasurementsJson(data_), "measurements");
  if (!written.ok()) path_.clear();
  return written;
}

}  // namespace hetrun::pipeline

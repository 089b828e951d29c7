// Scenario parser for `hetrun simulate`: strict (unknown keys are errors), every error names its
// JSON path. nlohmann::json exceptions are caught here and never leave the library.
#include "hetrun/tuner/scenario.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrun/base/input_file.h"

namespace hetrun::tuner {
namespace {

using nlohmann::json;

constexpr int64_t kMaxRanks = 65536;
constexpr int64_t kMaxIterations = 1'000'000;
constexpr int64_t kMaxWork = 50'000'000;  // ranks * iterations
constexpr int64_t kMaxBatch = int64_t{1} << 40;

Status PathError(const std::string& path, const std::string& what) {
  return InvalidArgumentError("scenario: " + path + ": " + what);
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string Shown(const json& value) {
  std::string text = value.dump();
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

Status CheckObject(const json& value, const std::string& path,
                   std::initializer_list<std::string_view> allowed) {
  if (!value.is_object()) {
    return PathError(path.empty() ? "(top level)" : path, "must be an object, got " + Shown(value));
  }
  for (const auto& item : value.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
      std::string known;
      for (std::string_view k : allowed) known += (known.empty() ? "" : ", ") + std::string(k);
      return PathError(Join(path, item.key()), "unknown key (known: " + known + ")");
    }
  }
  return Status::Ok();
}

// An integer in [lo, hi]; `fallback` when absent and not required.
Result<int64_t> GetInt(const json& object, const std::string& path, const std::string& key,
                       int64_t lo, int64_t hi, std::optional<int64_t> fallback) {
  std::string where = Join(path, key);
  if (!object.contains(key)) {
    if (fallback) return *fallback;
    return PathError(where, "missing");
  }
  const json& v = object.at(key);
  if (!v.is_number_integer()) {
    return PathError(where, "must be an integer, got " + Shown(v));
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return PathError(where, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + Shown(v));
  }
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return PathError(where, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + Shown(v));
  }
  return x;
}

// A finite number with lo < x (or lo <= x when `lo_inclusive`) and x <= hi.
Result<double> GetNumber(const json& object, const std::string& path, const std::string& key,
                         double lo, bool lo_inclusive, double hi, std::optional<double> fallback) {
  std::string where = Join(path, key);
  if (!object.contains(key)) {
    if (fallback) return *fallback;
    return PathError(where, "missing");
  }
  const json& v = object.at(key);
  if (!v.is_number()) return PathError(where, "must be a number, got " + Shown(v));
  double x = v.get<double>();
  bool ok = std::isfinite(x) && (lo_inclusive ? x >= lo : x > lo) && x <= hi;
  if (!ok) {
    std::ostringstream range;
    range << "must be a number " << (lo_inclusive ? ">= " : "> ") << lo << " and <= " << hi
          << ", got " << Shown(v);
    return PathError(where, range.str());
  }
  return x;
}

// "profile": [[n, ms], ...]: n integers strictly increasing from 0, ms > 0 non-decreasing.
Result<std::vector<ProfilePoint>> ParseProfile(const json& j, const std::string& path) {
  if (!j.is_array() || j.size() < 2) {
    return PathError(path, "must be an array of at least 2 [samples, ms] points, got " + Shown(j));
  }
  std::vector<ProfilePoint> points;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string where = path + "[" + std::to_string(i) + "]";
    const json& p = j[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number()) {
      return PathError(where,
                       "must be a [samples, ms] pair of an integer and a number, got " + Shown(p));
    }
    ProfilePoint point;
    point.samples = p[0].is_number_unsigned() && p[0].get<uint64_t>() > uint64_t{kMaxBatch}
                        ? kMaxBatch + 1
                        : p[0].get<int64_t>();
    point.ms = p[1].get<double>();
    if (i == 0 && point.samples != 0)
      return PathError(where, "the first point must be at 0 samples");
    if (i > 0 && point.samples <= points.back().samples) {
      return PathError(where, "samples must increase strictly, got " + Shown(p[0]) + " after " +
                                  std::to_string(points.back().samples));
    }
    if (point.samples > kMaxBatch) return PathError(where, "samples must be <= 2^40");
    if (!std::isfinite(point.ms) || point.ms <= 0 || point.ms > 1e9) {
      return PathError(where, "ms must be a number > 0 and <= 1e9, got " + Shown(p[1]));
    }
    if (i > 0 && point.ms < points.back().ms) {
      return PathError(where, "ms must not decrease, got " + Shown(p[1]) + " after " +
                                  Shown(json(points.back().ms)));
    }
    points.push_back(point);
  }
  return points;
}

Result<ScenarioRank> ParseRank(const json& j, const std::string& path, int64_t batch) {
  HETRUN_RETURN_IF_ERROR(
      CheckObject(j, path,
                  {"family", "model", "ms_fixed", "ms_per_sample", "profile", "max_samples",
                   "max_micro_batch", "ms_per_micro_batch", "memory_mib"}));
  ScenarioRank rank;
  if (!j.contains("family")) return PathError(Join(path, "family"), "missing");
  if (!j.at("family").is_string()) {
    return PathError(Join(path, "family"), "must be a string, got " + Shown(j.at("family")));
  }
  rank.family = j.at("family").get<std::string>();
  if (!DatasheetTflops(rank.family).ok()) {
    return PathError(Join(path, "family"), DatasheetTflops(rank.family).status().message());
  }
  if (j.contains("model")) {
    if (!j.at("model").is_string() || j.at("model").get<std::string>().size() > 15) {
      return PathError(Join(path, "model"),
                       "must be a string of at most 15 characters, got " + Shown(j.at("model")));
    }
    rank.model = j.at("model").get<std::string>();
  }
  if (j.contains("profile")) {
    for (const char* line : {"ms_fixed", "ms_per_sample"}) {
      if (j.contains(line)) {
        return PathError(Join(path, line), "give either profile or ms_fixed + ms_per_sample");
      }
    }
    HETRUN_ASSIGN_OR_RETURN(rank.profile, ParseProfile(j.at("profile"), Join(path, "profile")));
  } else {
    HETRUN_ASSIGN_OR_RETURN(rank.ms_fixed, GetNumber(j, path, "ms_fixed", 0, false, 1e9, {}));
    HETRUN_ASSIGN_OR_RETURN(rank.ms_per_sample,
                            GetNumber(j, path, "ms_per_sample", 0, false, 1e9, {}));
  }
  HETRUN_ASSIGN_OR_RETURN(rank.max_samples, GetInt(j, path, "max_samples", 0, kMaxBatch, batch));
  HETRUN_ASSIGN_OR_RETURN(rank.max_micro_batch,
                          GetInt(j, path, "max_micro_batch", 1, kMaxBatch, int64_t{0}));
  HETRUN_ASSIGN_OR_RETURN(rank.ms_per_micro_batch,
                          GetNumber(j, path, "ms_per_micro_batch", 0, true, 1e9, 0.0));
  HETRUN_ASSIGN_OR_RETURN(int64_t mib,
                          GetInt(j, path, "memory_mib", 1, int64_t{64} << 20, int64_t{0}));
  rank.memory_bytes = static_cast<uint64_t>(mib) << 20;
  return rank;
}

Result<ScenarioSpikes> ParseSpikes(const json& root) {
  ScenarioSpikes spikes;
  if (!root.contains("spikes")) return spikes;
  const json& j = root.at("spikes");
  HETRUN_RETURN_IF_ERROR(CheckObject(j, "spikes", {"probability", "factor"}));
  HETRUN_ASSIGN_OR_RETURN(spikes.probability,
                          GetNumber(j, "spikes", "probability", 0, true, 1, {}));
  HETRUN_ASSIGN_OR_RETURN(spikes.factor, GetNumber(j, "spikes", "factor", 1, true, 1e6, {}));
  return spikes;
}

// Micro-batch caps: given per rank, or from the memory block (never both); a per-micro-batch
// time needs a cap.
Status CheckMicroBatches(Scenario& s) {
  for (size_t st = 0; st < s.stages.size(); ++st) {
    for (size_t r = 0; r < s.stages[st].ranks.size(); ++r) {
      const ScenarioRank& rank = s.stages[st].ranks[r];
      const std::string path =
          "stages[" + std::to_string(st) + "].ranks[" + std::to_string(r) + "]";
      if (s.memory.given && rank.max_micro_batch > 0) {
        return PathError(Join(path, "max_micro_batch"),
                         "give either max_micro_batch or the scenario's memory block");
      }
    }
  }
  HETRUN_RETURN_IF_ERROR(ApplyMemoryCeilings(s, s.memory.per_model));
  for (size_t st = 0; st < s.stages.size(); ++st) {
    for (size_t r = 0; r < s.stages[st].ranks.size(); ++r) {
      const ScenarioRank& rank = s.stages[st].ranks[r];
      if (rank.ms_per_micro_batch > 0 && rank.max_micro_batch == 0) {
        return PathError("stages[" + std::to_string(st) + "].ranks[" + std::to_string(r) +
                             "].ms_per_micro_batch",
                         "needs max_micro_batch (or the memory block)");
      }
    }
  }
  return Status::Ok();
}

Result<ScenarioMemory> ParseMemory(const json& root) {
  ScenarioMemory m;
  if (!root.contains("memory")) return m;
  const json& j = root.at("memory");
  HETRUN_RETURN_IF_ERROR(
      CheckObject(j, "memory", {"fixed_bytes", "bytes_per_sample", "reserve_bytes", "ceiling"}));
  m.given = true;
  constexpr int64_t kMaxBytes = int64_t{1} << 50;
  HETRUN_ASSIGN_OR_RETURN(int64_t fixed, GetInt(j, "memory", "fixed_bytes", 0, kMaxBytes, {}));
  HETRUN_ASSIGN_OR_RETURN(int64_t bps, GetInt(j, "memory", "bytes_per_sample", 1, kMaxBytes, {}));
  HETRUN_ASSIGN_OR_RETURN(int64_t reserve, GetInt(j, "memory", "reserve_bytes", 0, kMaxBytes,
                                                  static_cast<int64_t>(m.reserve_bytes)));
  m.fixed_bytes = static_cast<uint64_t>(fixed);
  m.bytes_per_sample = static_cast<uint64_t>(bps);
  m.reserve_bytes = static_cast<uint64_t>(reserve);
  if (j.contains("ceiling")) {
    const json& c = j.at("ceiling");
    if (!c.is_string() || (c != "job" && c != "model")) {
      return PathError("memory.ceiling", "must be \"job\" or \"model\", got " + Shown(c));
    }
    m.per_model = c == "model";
  }
  return m;
}

Result<Scenario> ParseTree(const json& root) {
  HETRUN_RETURN_IF_ERROR(CheckObject(root, "",
                                     {"global_batch", "window", "iterations", "noise", "seed",
                                      "spikes", "stages", "events", "memory"}));
  Scenario s;
  HETRUN_ASSIGN_OR_RETURN(s.global_batch, GetInt(root, "", "global_batch", 1, kMaxBatch, {}));
  HETRUN_ASSIGN_OR_RETURN(s.window, GetInt(root, "", "window", 1, kMaxIterations, {}));
  HETRUN_ASSIGN_OR_RETURN(s.iterations, GetInt(root, "", "iterations", 1, kMaxIterations, {}));
  HETRUN_ASSIGN_OR_RETURN(s.noise, GetNumber(root, "", "noise", 0, true, 1, 0.0));
  HETRUN_ASSIGN_OR_RETURN(int64_t seed, GetInt(root, "", "seed", 0, INT64_MAX, int64_t{1}));
  s.seed = static_cast<uint64_t>(seed);
  HETRUN_ASSIGN_OR_RETURN(s.spikes, ParseSpikes(root));
  HETRUN_ASSIGN_OR_RETURN(s.memory, ParseMemory(root));

  if (!root.contains("stages")) return PathError("stages", "missing");
  const json& stages = root.at("stages");
  if (!stages.is_array() || stages.empty()) {
    return PathError("stages", "must be a non-empty array, got " + Shown(stages));
  }
  int64_t total = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    std::string path = "stages[" + std::to_string(i) + "]";
    const json& js = stages[i];
    HETRUN_RETURN_IF_ERROR(CheckObject(js, path, {"name", "ranks"}));
    ScenarioStage stage;
    stage.name = "stage" + std::to_string(i);
    if (js.contains("name")) {
      if (!js.at("name").is_string()) {
        return PathError(path + ".name", "must be a string, got " + Shown(js.at("name")));
      }
      stage.name = js.at("name").get<std::string>();
    }
    if (!js.contains("ranks")) return PathError(path + ".ranks", "missing");
    const json& ranks = js.at("ranks");
    if (!ranks.is_array() || ranks.empty()) {
      return PathError(path + ".ranks", "must be a non-empty array, got " + Shown(ranks));
    }
    if (total + static_cast<int64_t>(ranks.size()) > kMaxRanks) {
      return PathError(path + ".ranks", "more than " + std::to_string(kMaxRanks) + " ranks in all");
    }
    int64_t room = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      HETRUN_ASSIGN_OR_RETURN(
          ScenarioRank rank,
          ParseRank(ranks[r], path + ".ranks[" + std::to_string(r) + "]", s.global_batch));
      room += std::min(rank.max_samples, s.global_batch);
      stage.ranks.push_back(std::move(rank));
    }
    if (room < s.global_batch) {
      return PathError(path + ".ranks", "the ranks' max_samples add up to " + std::to_string(room) +
                                            " < global_batch " + std::to_string(s.global_batch));
    }
    total += static_cast<int64_t>(stage.ranks.size());
    s.stages.push_back(std::move(stage));
  }
  if (total * s.iterations > kMaxWork) {
    return PathError("iterations", "ranks * iterations = " + std::to_string(total * s.iterations) +
                                       " exceeds " + std::to_string(kMaxWork));
  }

  if (root.contains("events")) {
    const json& events = root.at("events");
    if (!events.is_array()) return PathError("events", "must be an array, got " + Shown(events));
    for (size_t i = 0; i < events.size(); ++i) {
      std::string path = "events[" + std::to_string(i) + "]";
      HETRUN_RETURN_IF_ERROR(CheckObject(events[i], path, {"iteration", "rank", "slowdown"}));
      ScenarioEvent e;
      HETRUN_ASSIGN_OR_RETURN(e.iteration,
                              GetInt(events[i], path, "iteration", 0, s.iterations - 1, {}));
      HETRUN_ASSIGN_OR_RETURN(e.rank, GetInt(events[i], path, "rank", 0, total - 1, {}));
      HETRUN_ASSIGN_OR_RETURN(e.slowdown,
                              GetNumber(events[i], path, "slowdown", 0, false, 1e6, {}));
      s.events.push_back(e);
    }
    std::stable_sort(
        s.events.begin(), s.events.end(),
        [](const ScenarioEvent& x, const ScenarioEvent& y) { return x.iteration < y.iteration; });
  }
  return s;
}

}  // namespace

double ScenarioRank::TrueMs(int64_t n) const {
  if (profile.empty()) return ms_fixed + ms_per_sample * static_cast<double>(n);
  size_t i = 1;
  while (i + 1 < profile.size() && profile[i].samples < n) ++i;
  const ProfilePoint& p = profile[i - 1];
  const ProfilePoint& q = profile[i];
  // Inside segment [p, q], or past the last point on the last segment's slope.
  const double slope = (q.ms - p.ms) / static_cast<double>(q.samples - p.samples);
  return p.ms + slope * static_cast<double>(n - p.samples);
}

int64_t ScenarioRank::MostSamplesWithin(double ms, int64_t limit, double scale,
                                        double extra_ms) const {
  auto fits = [&](int64_t n) { return scale * (TrueMs(n) + extra_ms) <= ms; };
  if (!fits(0)) return -1;
  if (fits(limit)) return limit;
  // TrueMs is non-decreasing: bisect for the last n that fits.
  int64_t lo = 0, hi = limit;  // fits(lo), !fits(hi)
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

int64_t ScenarioRank::MicroBatches(int64_t n) const {
  if (max_micro_batch <= 0) return 0;
  return std::max<int64_t>(1, (n + max_micro_batch - 1) / max_micro_batch);
}

int64_t Scenario::total_ranks() const {
  int64_t total = 0;
  for (const ScenarioStage& stage : stages) total += static_cast<int64_t>(stage.ranks.size());
  return total;
}

Result<Scenario> ParseScenario(std::string_view json_text) {
  if (json_text.size() > kMaxJsonInputBytes) {
    return InvalidArgumentError("scenario: larger than 16 MiB; not a scenario file");
  }
  HETRUN_RETURN_IF_ERROR(CheckJsonDepth(json_text, kMaxJsonDepth, "scenario"));
  try {
    json root = json::parse(json_text.begin(), json_text.end());
    HETRUN_ASSIGN_OR_RETURN(Scenario s, ParseTree(root));
    HETRUN_RETURN_IF_ERROR(CheckMicroBatches(s));
    return s;
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("scenario: not valid JSON: ") + e.what());
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("scenario: ") + e.what());
  }
}

Result<Scenario> LoadScenario(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(std::string text,
                          ReadRegularFile(path, kMaxJsonInputBytes, "scenario file"));
  Result<Scenario> s = ParseScenario(text);
  if (!s.ok()) return s.status().WithContext(path);
  return s;
}

}  // namespace hetrun::tuner

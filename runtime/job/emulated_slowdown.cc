#include "hetrun/job/emulated_slowdown.h"

#include <cmath>
#include <string>

#include "hetrun/base/units.h"

namespace hetrun {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Result<double> ParseFactor(std::string_view text, std::string_view whole) {
  Result<double> factor = ParseDouble(Trim(text));
  if (!factor.ok() || !std::isfinite(*factor) || *factor < 1.0) {
    return InvalidArgumentError("'" + std::string(whole) + "': factor '" + std::string(text) +
                                "' must be a number >= 1 (e.g. 3.17)");
  }
  return *factor;
}

// "K", "K/sample", "K@stepS" or "K/sample@stepS": the factor, its kind and the first step it
// applies to (0 without @).
Result<SlowdownPhase> ParseTimedFactor(std::string_view text, std::string_view whole) {
  text = Trim(text);
  SlowdownPhase phase;
  if (size_t at = text.find('@'); at != std::string_view::npos) {
    std::string_view when = Trim(text.substr(at + 1));
    Result<int64_t> step =
        when.substr(0, 4) == "step" ? ParseInt(when.substr(4)) : InvalidArgumentError("no step");
    if (!step.ok() || *step < 0) {
      return InvalidArgumentError("'" + std::string(whole) + "': '" + std::string(when) +
                                  "' is not a start step (write @stepN, N >= 0, e.g. @step30)");
    }
    phase.from_step = *step;
    text = text.substr(0, at);
  }
  text = Trim(text);
  constexpr std::string_view kPerSample = "/sample";
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    if (Trim(text.substr(slash)) != kPerSample) {
      return InvalidArgumentError("'" + std::string(whole) + "': '" +
                                  std::string(text.substr(slash)) +
                                  "' is not a factor suffix (the one suffix is /sample, e.g. "
                                  "ampere=3.17/sample)");
    }
    phase.per_sample = true;
    text = text.substr(0, slash);
  }
  HETRUN_ASSIGN_OR_RETURN(phase.factor, ParseFactor(text, whole));
  return phase;
}

// "rankN" -> N; nullopt for a family name.
Result<std::optional<int64_t>> RankKey(std::string_view key, std::string_view whole) {
  if (key.substr(0, 4) != "rank") return std::optional<int64_t>();
  Result<int64_t> rank = ParseInt(key.substr(4));
  if (!rank.ok() || *rank < 0) {
    return InvalidArgumentError("'" + std::string(whole) + "': '" + std::string(key) +
                                "' is not rankN (N >= 0, the global rank)");
  }
  return std::optional<int64_t>(*rank);
}

Status NoFamilyEntry(std::string_view whole, std::string_view family) {
  if (family.empty()) {
    return InvalidArgumentError("'" + std::string(whole) +
                                "' is a per-family map but HETRUN_GPU_FAMILY is not set (run "
                                "under `hetrun run`, set it, or add a '*=FACTOR' entry)");
  }
  return InvalidArgumentError("'" + std::string(whole) + "' has no entry for GPU family '" +
                              std::string(family) + "' (add " + std::string(family) +
                              "=FACTOR or *=FACTOR)");
}

}  // namespace

namespace {

// The product of the factors in force at `step` whose kind is `per_sample` (the family entry,
// at most one, then every rank entry).
double ProductAt(const std::vector<SlowdownPhase>& family, const std::vector<SlowdownPhase>& rank,
                 int64_t step, bool per_sample) {
  double factor = 1.0;
  for (const std::vector<SlowdownPhase>* phases : {&family, &rank}) {
    for (const SlowdownPhase& p : *phases) {
      if (p.from_step <= step && p.per_sample == per_sample) factor *= p.factor;
    }
  }
  return factor;
}

}  // namespace

double EmulatedSlowdown::At(int64_t step) const {
  return WholeAt(step) * PerSampleAt(step);
}

double EmulatedSlowdown::WholeAt(int64_t step) const {
  return ProductAt(family_, rank_, step, false);
}

double EmulatedSlowdown::PerSampleAt(int64_t step) const {
  return ProductAt(family_, rank_, step, true);
}

bool EmulatedSlowdown::constant() const {
  for (const SlowdownPhase& p : family_) {
    if (p.from_step > 0) return false;
  }
  for (const SlowdownPhase& p : rank_) {
    if (p.from_step > 0) return false;
  }
  return true;
}

Result<EmulatedSlowdown> ParseEmulatedSlowdownSchedule(std::string_view text,
                                                       std::string_view family, int64_t rank) {
  std::string_view whole = text;
  text = Trim(text);
  EmulatedSlowdown out;
  if (text.empty()) return out;
  if (text.find('=') == std::string_view::npos) {
    HETRUN_ASSIGN_OR_RETURN(SlowdownPhase phase, ParseTimedFactor(text, whole));
    out.family_.push_back(phase);
    return out;
  }
  std::optional<SlowdownPhase> match, fallback;
  bool any_family = false;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("'" + std::string(whole) + "': entry '" + std::string(entry) +
                                  "' is not FAMILY=FACTOR or rankN=FACTOR");
    }
    std::string_view key = Trim(entry.substr(0, eq));
    HETRUN_ASSIGN_OR_RETURN(SlowdownPhase phase, ParseTimedFactor(entry.substr(eq + 1), whole));
    HETRUN_ASSIGN_OR_RETURN(std::optional<int64_t> rank_key, RankKey(key, whole));
    if (rank_key) {
      if (*rank_key == rank) out.rank_.push_back(phase);
      continue;
    }
    any_family = true;
    if (key == "*") {
      fallback = phase;
    } else if (key == family) {
      match = phase;
    }
  }
  if (match || fallback) {
    out.family_.push_back(match ? *match : *fallback);
  } else if (any_family) {
    return NoFamilyEntry(whole, family);
  }
  return out;
}

Result<double> ParseEmulatedSlowdown(std::string_view text, std::string_view family) {
  HETRUN_ASSIGN_OR_RETURN(EmulatedSlowdown schedule,
                          ParseEmulatedSlowdownSchedule(text, family, -1));
  return schedule.At(0);
}

Result<EmulatedSlowdown> EmulatedSlowdownScheduleFromEnv(const Environment& env) {
  std::optional<std::string> value = env.Get("HETRUN_EMULATE_SLOWDOWN");
  if (!value) return EmulatedSlowdown();
  Result<std::optional<int64_t>> rank = env.GetInt("RANK");
  if (!rank.ok()) return rank.status();
  Result<EmulatedSlowdown> schedule = ParseEmulatedSlowdownSchedule(
      *value, env.Get("HETRUN_GPU_FAMILY").value_or(""), rank->value_or(-1));
  if (!schedule.ok()) return schedule.status().WithContext("HETRUN_EMULATE_SLOWDOWN");
  return schedule;
}

Result<double> EmulatedSlowdownFromEnv(const Environment& env) {
  HETRUN_ASSIGN_OR_RETURN(EmulatedSlowdown schedule, EmulatedSlowdownScheduleFromEnv(env));
  return schedule.At(0);
}

}  // namespace hetrun

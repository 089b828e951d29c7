#include "hetrun/base/env.h"

#include <cassert>
#include <sstream>

#include "hetrun/base/shown_text.h"
#include "hetrun/base/units.h"

extern char** environ;  // NOLINT: POSIX; read only in Environment::FromProcess().

namespace hetrun {
namespace {

constexpr EnvVarSpec kTable[] = {
#define HETRUN_ENV_VAR(name, type, default_value, category, description) \
  {#name, type, default_value, EnvCategory::category, description},
#include "env_vars.def"
#undef HETRUN_ENV_VAR
};

// True when `name` matches `pattern`, where "<TASK>" stands for one or more characters.
bool MatchesPattern(std::string_view pattern, std::string_view name) {
  constexpr std::string_view kPlaceholder = "<TASK>";
  size_t at = pattern.find(kPlaceholder);
  if (at == std::string_view::npos) return pattern == name;
  std::string_view prefix = pattern.substr(0, at);
  std::string_view suffix = pattern.substr(at + kPlaceholder.size());
  return name.size() > prefix.size() + suffix.size() && name.substr(0, prefix.size()) == prefix &&
         name.substr(name.size() - suffix.size()) == suffix;
}

std::string BadValue(std::string_view name, std::string_view value, const Status& why) {
  return std::string(name) + "='" + ShownText(value, 64) + "'" + " (environment): " + why.message();
}

template <typename T, typename Parse>
Result<std::optional<T>> GetTyped(const Environment& env, std::string_view name, Parse parse) {
  std::optional<std::string> value = env.Get(name);
  if (!value) return std::optional<T>();
  auto parsed = parse(*value);
  if (!parsed.ok()) return InvalidArgumentError(BadValue(name, *value, parsed.status()));
  return std::optional<T>(*parsed);
}

}  // namespace

std::string_view EnvCategoryName(EnvCategory category) {
  switch (category) {
    case EnvCategory::kHetrun:
      return "hetrun";
    case EnvCategory::kLauncher:
      return "launcher";
    case EnvCategory::kWorker:
      return "worker";
    case EnvCategory::kSystem:
      return "system";
  }
  return "unknown";
}

std::span<const EnvVarSpec> EnvVarTable() {
  return kTable;
}

const EnvVarSpec* FindEnvVarSpec(std::string_view name) {
  for (const EnvVarSpec& spec : kTable) {
    if (MatchesPattern(spec.name, name)) return &spec;
  }
  return nullptr;
}

std::string EnvVarTableMarkdown() {
  std::ostringstream out;
  out << "| variable | type | default | read/written | meaning |\n";
  out << "|---|---|---|---|---|\n";
  for (const EnvVarSpec& spec : kTable) {
    out << "| `" << spec.name << "` | " << spec.type << " | "
        << (spec.default_value.empty() ? std::string_view("") : spec.default_value) << " | "
        << (spec.category == EnvCategory::kWorker ? "written" : "read") << " ("
        << EnvCategoryName(spec.category) << ") | " << spec.description << " |\n";
  }
  return out.str();
}

std::string EnvVarTableText() {
  std::ostringstream out;
  EnvCategory current = EnvCategory::kSystem;
  bool first = true;
  for (const EnvVarSpec& spec : kTable) {
    if (first || spec.category != current) {
      current = spec.category;
      first = false;
      switch (current) {
        case EnvCategory::kHetrun:
          out << "\nhetrun settings (flags override these):\n";
          break;
        case EnvCategory::kLauncher:
          out << "\nRead from Volcano, Kubeflow, MPI, Slurm and JobSet:\n";
          break;
        case EnvCategory::kSystem:
          out << "\nOther variables read or passed on:\n";
          break;
        case EnvCategory::kWorker:
          out << "\nWritten for each worker:\n";
          break;
      }
    }
    std::string name(spec.name);
    out << "  " << name;
    for (size_t i = name.size(); i < 32; ++i) out << ' ';
    out << ' ' << spec.description;
    if (!spec.default_value.empty()) out << " [default: " << spec.default_value << "]";
    out << "\n";
  }
  return out.str();
}

Environment Environment::FromProcess() {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    vars.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::Get(std::string_view name) const {
  assert(FindEnvVarSpec(name) != nullptr && "undeclared variable: add it to env_vars.def");
  auto it = vars_.find(std::string(name));
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

Result<std::optional<int64_t>> Environment::GetInt(std::string_view name) const {
  return GetTyped<int64_t>(*this, name, [](std::string_view v) { return ParseInt(v); });
}

Result<std::optional<bool>> Environment::GetBool(std::string_view name) const {
  return GetTyped<bool>(*this, name, [](std::string_view v) { return ParseBool(v); });
}

Result<std::optional<std::chrono::milliseconds>> Environment::GetDuration(
    std::string_view name) const {
  return GetTyped<std::chrono::milliseconds>(*this, name,
                                             [](std::string_view v) { return ParseDuration(v); });
}

Result<std::optional<uint64_t>> Environment::GetBytes(std::string_view name) const {
  return GetTyped<uint64_t>(*this, name, [](std::string_view v) { return ParseBytes(v); });
}

std::vector<std::string> Environment::NamesWithPrefix(std::string_view prefix) const {
  std::vector<std::string> names;
  for (auto it = vars_.lower_bound(std::string(prefix)); it != vars_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    names.push_back(it->first);
  }
  return names;
}

}  // namespace hetrun

// The environment, read once, and the table that declares every variable hetrun reads or writes.
// Environment::FromProcess() is the only place in hetrun that reads the process environment;
// libraries take an Environment so tests can enumerate cases without touching globals.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun {

enum class EnvCategory {
  kHetrun,    ///< hetrun's own settings
  kLauncher,  ///< written by Volcano, Kubeflow, MPI or Slurm; read by hetrun
  kWorker,    ///< written by hetrun for each worker
  kSystem,    ///< other variables hetrun reads or writes
};

std::string_view EnvCategoryName(EnvCategory category);

struct EnvVarSpec {
  std::string_view name;  ///< may contain one "<TASK>" placeholder
  std::string_view type;
  std::string_view default_value;
  EnvCategory category;
  std::string_view description;
};

/// Every declared variable, in declaration order (runtime/base/env_vars.def).
std::span<const EnvVarSpec> EnvVarTable();

/// The entry that declares `name` (placeholders match one or more characters), or nullptr.
const EnvVarSpec* FindEnvVarSpec(std::string_view name);

/// The table as a Markdown table (docs/reference/environment.md) or as plain text (--help).
std::string EnvVarTableMarkdown();
std::string EnvVarTableText();

/// An immutable snapshot of environment variables.
class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  /// Environment({{"RANK", "0"}, {"WORLD_SIZE", "2"}}) in tests.
  Environment(std::initializer_list<std::pair<const std::string, std::string>> vars)
      : vars_(vars) {}

  /// Snapshot of this process's environment (the only reader of environ in hetrun).
  static Environment FromProcess();

  /// The value of a declared variable, or nullopt when unset. Asking for a variable that the
  /// table does not declare is a programming error (asserts in debug builds).
  std::optional<std::string> Get(std::string_view name) const;

  /// Typed accessors: nullopt when unset; an error naming the variable and its value when the
  /// value does not parse.
  Result<std::optional<int64_t>> GetInt(std::string_view name) const;
  Result<std::optional<bool>> GetBool(std::string_view name) const;
  Result<std::optional<std::chrono::milliseconds>> GetDuration(std::string_view name) const;
  Result<std::optional<uint64_t>> GetBytes(std::string_view name) const;

  /// Names of set variables that start with `prefix` (e.g. "VC_"), sorted.
  std::vector<std::string> NamesWithPrefix(std::string_view prefix) const;

  /// Every variable, declared or not (what workers inherit).
  const std::map<std::string, std::string>& all() const { return vars_; }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace hetrun

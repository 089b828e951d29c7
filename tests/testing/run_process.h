// Test support: run a real program, capture its output and exit code, with a hard time limit.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hetrun::testing {

struct ProcessResult {
  int exit_code = -1;      ///< exit code, or 128 + signal; -1 when it could not be started
  bool timed_out = false;  ///< killed by RunProcess after the time limit
  std::string out;         ///< stdout
  std::string err;         ///< stderr
  std::chrono::milliseconds elapsed{0};
};

struct ProcessOptions {
  /// The child's whole environment (like `env -i`); nullopt = inherit this process's.
  std::optional<std::map<std::string, std::string>> env;
  std::chrono::milliseconds timeout{60'000};
  std::string stdin_text;
  std::string cwd;
};

/// Runs argv[0] (searched in PATH) and waits for it; SIGKILLs its process group at the timeout.
ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessOptions& options = {});

class TempDir;

/// Options for a child that lives in `dir`: its whole environment is PATH (this process's, else
/// /usr/bin:/bin), HOME and TMPDIR = dir, OMP_NUM_THREADS=1, plus `extra`.
ProcessOptions IsolatedIn(const TempDir& dir, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& extra = {});

/// A fresh empty directory under $TMPDIR, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `content` to path()/name (creating parent folders) and returns the full path.
  std::string WriteFile(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

}  // namespace hetrun::testing

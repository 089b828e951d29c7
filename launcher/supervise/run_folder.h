// The run folder: one private directory per `hetrun run`, for the files hetrun and its workers
// share on this node (heartbeat files, TORCHELASTIC_ERROR_FILE; later the pipeline layout and
// metrics files). Workers find it in HETRUN_RUN_DIR.
//
//   path      <base>/run-XXXXXX, base = HETRUN_RUN_BASE, else $TMPDIR/hetrun-<uid>, else
//             /tmp/hetrun-<uid>; base is created 0700 and must be a directory of this user
//             (not a symlink), the run folder 0700.
//   layout    heartbeat/rank_<local rank>, attempt_<restart>/rank_<rank>/error.json
//   lifetime  created before the preflight; removed with everything in it when hetrun exits
//             (success or failure).
//   cleanup   each run folder holds a lock (flock on .lock) for as long as its hetrun lives; the
//             kernel drops it when that process dies, SIGKILL included. Every `hetrun run` first
//             removes the run folders under base whose lock it can take: those of a hetrun that
//             was killed before it could clean up. The lock is taken before it appears in the new
//             folder (made as <base>/.lock-XXXXXX, locked, renamed in), so hetruns that start at
//             once never take each other's new folder for a stale one.
#pragma once

#include <memory>
#include <string>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {

class RunFolder {
 public:
  /// Removes stale run folders under `base`, then creates and locks a new one.
  static Result<std::unique_ptr<RunFolder>> Create(const std::string& base);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::string& path() const { return path_; }

  /// Creates path()/`relative` (and its parents) and returns its full path.
  Result<std::string> MakeDir(const std::string& relative) const;

 private:
  RunFolder(std::string path, UniqueFd lock) : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  UniqueFd lock_;
};

/// The base folder of run folders: HETRUN_RUN_BASE, else $TMPDIR/hetrun-<uid>, else
/// /tmp/hetrun-<uid>.
std::string RunFolderBase(const Environment& env);

/// Removes the run folders under `base` whose lock nobody holds; returns how many.
int RemoveStaleRunFolders(const std::string& base);

}  // namespace hetrun::launcher

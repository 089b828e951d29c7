// Folders only this user may enter, in places others may write to ($TMPDIR, a shared --log-dir):
// made with mode 0700, and an entry found there instead is accepted only when it is a directory
// of this user, not a symlink (docs/ARCHITECTURE.md §2.4: files in shared folders).
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// Creates `dir` (mode 0700; its parent must exist) or accepts it when it already is a directory
/// owned by this user, not a symlink; such a folder readable by others is made 0700. Errors name
/// `dir` and `what` ("--tee/--redirects"): another user's folder or a symlink is
/// kInvalidArgument (exit 78), a failed call names the call.
Status MakePrivateDir(const std::string& dir, std::string_view what);

/// MakePrivateDir for `dir` and each missing folder below `existing` on the way to it
/// (`existing` must be a prefix of `dir` and exist).
Status MakePrivateDirs(const std::string& existing, const std::string& dir, std::string_view what);

}  // namespace hetrun::launcher

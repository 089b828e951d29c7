// The re-plan checkpoint's layout under --checkpoint-dir DIR (docs/how-to/replan-restart.md,
// docs/ARCHITECTURE.md §5.9): every save goes into a new sub-folder of DIR, and once every rank's
// part is written, global rank 0 publishes it by replacing DIR/hetrun-latest atomically (a
// temporary file renamed over it) with the sub-folder's name. The previous checkpoint stays
// loadable until then, so a save cut short leaves the last complete one in place.
//
// hetrun's own check (ReplanWait::Finish) asks more than "complete": the pointer must have
// changed since the attempt started (this attempt's workers published it; a checkpoint left from
// an earlier run does not count) and name a sub-folder that holds DCP's `.metadata`.
#pragma once

#include <optional>
#include <string>

namespace hetrun::launcher {

/// The pointer file's name inside DIR.
inline constexpr const char* kCheckpointPointer = "hetrun-latest";

/// The first line of DIR/hetrun-latest (never through a symbolic link, at most 4 KiB read);
/// nullopt when absent or unreadable, "" when empty.
std::optional<std::string> ReadCheckpointPointer(const std::string& dir);

/// Whether the pointer as read at the end of an attempt names a complete checkpoint that this
/// attempt published: "" when so, else the reason (for the failure's detail). `before` is what
/// ReadCheckpointPointer returned when the attempt started.
std::string CheckpointPublishedSince(const std::string& dir,
                                     const std::optional<std::string>& before);

}  // namespace hetrun::launcher

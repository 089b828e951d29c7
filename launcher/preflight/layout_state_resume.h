// hetrun run --layout-state FILE (HETRUN_LAYOUT_STATE): the job starts from the split that live
// layer moves reached in an earlier run of it (hetrun/pipeline/layout_state.h). One machine
// reads the file itself; across nodes node 0 reads it and sends its text in its rendezvous
// record, and every node makes the same choice from that text (docs/how-to/restarts.md).
#pragma once

#include <optional>
#include <string>

#include "hetrun/pipeline/job_layout.h"

namespace hetrun::launcher {

/// The layout state's text, or "" when there is none yet (no message) or it cannot be used: not
/// a regular file, too large, unreadable or empty (a warning that says so; the job then starts
/// from its plan).
std::string ReadLayoutStateForStart(const std::string& path);

/// Replaces `layout` with the state's split when ChooseStartLayout takes it, and logs the choice
/// (info when resumed, a warning naming why when ignored). Nothing when `text` is empty; a state
/// without a pipeline layout only says it is unused. True when `layout` changed.
bool ResumeFromLayoutState(std::optional<pipeline::JobLayout>& layout, const std::string& text,
                           const std::string& path);

}  // namespace hetrun::launcher

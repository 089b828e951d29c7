// The Kubernetes termination log: one short reason for a non-zero exit (docs/ARCHITECTURE.md §4.3).
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun::launcher {

inline constexpr size_t kTerminationLogMaxBytes = 4096;

/// Writes `reason` (cut to 4096 bytes at a UTF-8 boundary) to HETRUN_TERMINATION_LOG, else to
/// /dev/termination-log when that file exists and is writable. The default path is never
/// created: outside Kubernetes there is nothing to write. OK when there is nowhere to write.
Status WriteTerminationLog(const Environment& env, std::string_view reason);

/// `reason` cut to at most `max_bytes` without splitting a UTF-8 sequence.
std::string TruncateUtf8(std::string_view reason, size_t max_bytes);

}  // namespace hetrun::launcher

// Reading untrusted input files with bounds: only regular files (a FIFO, a device such as
// /dev/zero or a directory is refused with a clear error instead of blocking or reading without
// end), at most a given size, and JSON nested no deeper than a limit (checked before parsing,
// so a file of 100 KB of '[' is an error, not a stack overflow).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun {

/// Largest JSON input hetrun reads (model, cluster, scenario files): 16 MiB.
inline constexpr size_t kMaxJsonInputBytes = size_t{16} << 20;

/// Deepest nesting of arrays and objects accepted in a JSON input. Real inputs nest 4 levels.
inline constexpr size_t kMaxJsonDepth = 64;

/// The whole content of the regular file `path`, at most `max_bytes` bytes. `what` names the
/// input in errors ("model file"). Opening never blocks (O_NONBLOCK: a FIFO without a writer is
/// refused, not waited on). Errors: kNotFound when it does not exist, kInvalidArgument when it
/// is not a regular file or is larger than `max_bytes` (exit 78 either way), kInternal for a
/// failed read.
Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                    std::string_view what);

/// OK when the arrays and objects of the JSON `text` nest at most `max_depth` deep (brackets
/// inside strings do not count). Linear in the text, no recursion. `source` names the input.
Status CheckJsonDepth(std::string_view text, size_t max_depth, std::string_view source);

}  // namespace hetrun

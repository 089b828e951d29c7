// Writing a file so that a reader never sees half of it: the text goes to a fresh temporary
// beside PATH (PATH.tmp.<pid>.<random>, created with O_EXCL|O_NOFOLLOW, so an entry planted in a
// shared folder is never written through), is fsync'ed and then renamed over PATH (one rename(2)
// within a folder is atomic), and the folder is fsync'ed. Used for files that other
// processes read while the writer runs: the pipeline's layout file and measurement files.
#pragma once

#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun {

/// Writes `text` to `path` through a unique temporary, fsync(2) and rename(2), with file mode
/// `mode` (less the umask). Every
/// system call is checked; errors name the call and the file (`what` prefixes them: "layout
/// file"). On error the temporary file is removed and `path` is left as it was.
Status WriteFileAtomically(const std::string& path, std::string_view text, std::string_view what,
                           unsigned mode = 0644);

}  // namespace hetrun

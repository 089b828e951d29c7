// Untrusted text shown to a person (stderr, the termination log): cut between characters, never
// inside a UTF-8 sequence, with control characters and invalid bytes escaped, so a worker's error
// file or a command-line argument cannot split a character or drive the terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hetrun {

/// `text` with C0 controls and DEL escaped (\n \r \t, else \xNN), C1 controls as \u00NN and bytes
/// that are not valid UTF-8 as \xNN; valid UTF-8 characters stay. When the result would exceed
/// `max_bytes`, it ends at the last whole character or escape within them, followed by "...".
/// `keep_newlines` keeps '\n' as it is (multi-line messages whose first line is taken later).
std::string ShownText(std::string_view text, size_t max_bytes, bool keep_newlines = false);

/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF).
bool IsValidUtf8(std::string_view text);

}  // namespace hetrun

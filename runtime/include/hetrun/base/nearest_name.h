// "Did you mean ...?": the known name closest to a mistyped one, by edit distance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hetrun {

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions).
size_t EditDistance(std::string_view a, std::string_view b);

/// The name of `known` closest to `name` when at most `max_distance` edits away, else "".
/// Ties go to the first in `known`. `name` is cut to 64 characters first.
std::string NearestName(std::string_view name, const std::vector<std::string>& known,
                        size_t max_distance);

}  // namespace hetrun

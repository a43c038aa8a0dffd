#pragma once

#include <string>
#include <vector>

namespace concord::core {

// The names closest to a mistyped one, for "did you mean" hints: those at the smallest edit
// distance found (insertions, deletions, substitutions and swaps of neighbours), if it is small
// for the word's length, at most `limit`. A name that differs only in case or in '-' against '_' counts as nearest.
std::vector<std::string> similar_names(const std::string& word, const std::vector<std::string>& names,
                                       size_t limit = 3);

// " (did you mean X?)" or " (did you mean X, Y or Z?)" for the names similar_names finds, or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names);

}  // namespace concord::core

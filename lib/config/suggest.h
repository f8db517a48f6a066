// suggest.h: "did you mean" suggestions by edit distance.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gradshare::config {

// Levenshtein distance (insert, delete, substitute; each costs 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` when it is close enough to be a likely typo (distance at most
// a third of the word's length, at least 1, at most 3); empty when none is.
std::string suggest_closest(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" when there is no suggestion.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace gradshare::config

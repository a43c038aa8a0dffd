#include "concord/core/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace concord::core {
namespace {

// Folds case and '-' against '_', the two ways of writing a name that a user does not see as typos.
std::string folded(const std::string& text) {
  std::string result = text;
  for (char& c : result) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// Optimal string alignment distance: Levenshtein's with a swap of two neighbours as one edit.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::vector<std::string> similar_names(const std::string& word, const std::vector<std::string>& names, size_t limit) {
  const std::string typed = folded(word);
  // One edit in a short name, up to a third of the letters in a long one.
  const size_t allowed = std::max<size_t>(1, (typed.size() + 1) / 3);
  std::vector<std::pair<size_t, std::string>> close;
  for (const std::string& name : names) {
    if (name == word) continue;
    // The distance is at least the difference in length: a pasted megabyte is no typo of any name,
    // and its table of distances would take seconds and gigabytes to fill.
    const size_t longer = std::max(typed.size(), name.size());
    if (longer - std::min(typed.size(), name.size()) > allowed) continue;
    const size_t distance = edit_distance(typed, folded(name));
    if (distance <= allowed) close.emplace_back(distance, name);
  }
  std::stable_sort(close.begin(), close.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> result;
  for (const auto& [distance, name] : close) {
    // Only the nearest: algo.ppo.learning_rte is algo.ppo.learning_rate, not algo.a2c's.
    if (result.size() == limit || distance > close.front().first) break;
    if (std::find(result.begin(), result.end(), name) == result.end()) result.push_back(name);
  }
  return result;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::vector<std::string> close = similar_names(word, names);
  if (close.empty()) return "";
  std::string text = " (did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) text += i + 1 == close.size() ? " or " : ", ";
    text += close[i];
  }
  return text + "?)";
}

}  // namespace concord::core

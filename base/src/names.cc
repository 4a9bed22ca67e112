#include "shardscope/base/names.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace shardscope {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Edits to turn a into b: insertions, deletions, substitutions and swaps of two adjacent
// letters ("trian" is one edit from "train").
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string LastComponent(const std::string& s) {
  const size_t dot = s.rfind('.');
  return dot == std::string::npos ? s : s.substr(dot + 1);
}

}  // namespace

std::vector<std::string> CloseNames(const std::string& name,
                                    const std::vector<std::string>& candidates, size_t max) {
  const size_t limit = std::max<size_t>(1, std::min<size_t>(3, name.size() / 3));
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    size_t d = EditDistance(Lower(name), Lower(c));
    if (d > limit && LastComponent(c) == LastComponent(name)) d = limit;
    // A shortened name ("recursive" for "recursive_programming") counts as close.
    if (d > limit && name.size() >= 3 && Lower(c).rfind(Lower(name), 0) == 0) d = limit;
    if (d <= limit && c != name) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, c] : scored) {
    if (out.size() == max) break;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string DidYouMean(const std::string& name, const std::vector<std::string>& candidates) {
  std::vector<std::string> close = CloseNames(name, candidates);
  if (close.empty()) return "";
  std::string out = " (did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == close.size() ? " or " : ", ") + ("'" + close[i] + "'");
  }
  return out + "?)";
}

}  // namespace shardscope

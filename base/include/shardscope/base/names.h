// Suggestions for misspelt names: "unknown key 'latnecy' (did you mean 'latency'?)". Shared
// by the model-file parser and the cost and cluster profile readers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shardscope {

// The candidates close to `name` (edit distance, ignoring case, the same last dotted
// component, or `name` a prefix of at least 3 characters), closest first, at most `max`.
std::vector<std::string> CloseNames(const std::string& name,
                                    const std::vector<std::string>& candidates, size_t max = 4);
// " (did you mean 'x'?)" for the closest candidates, or "".
std::string DidYouMean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace shardscope

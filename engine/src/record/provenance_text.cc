#include "record/provenance_text.h"

namespace shardscope {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "mode: rest" -> {mode, rest}; no mode prefix: {"", text}.
std::pair<std::string, std::string> SplitMode(const std::string& text) {
  for (const char* mode :
       {"semi_auto", "sharding_propagation", "recursive_programming", "dynamic_programming"}) {
    const std::string prefix = std::string(mode) + ":";
    if (!StartsWith(text, prefix)) continue;
    size_t begin = prefix.size();
    while (begin < text.size() && text[begin] == ' ') ++begin;
    return {mode, text.substr(begin)};
  }
  return {"", text};
}

ProvenanceText FromSearch(const std::string& why) {
  if (StartsWith(why, "user: ")) return {"user", "the user's strategy " + why.substr(6)};
  const auto [mode, rest] = SplitMode(why);
  const std::string by = mode.empty() ? "" : " (" + mode + ")";
  if (StartsWith(rest, "propagated ")) return {"propagated", rest.substr(11) + by};
  if (rest.find("default") != std::string::npos || rest.find("data-parallel") != std::string::npos)
    return {"default", rest + by};
  return {"search", rest + by};
}

ProvenanceText FromPartition(const std::string& why) {
  if (StartsWith(why, "user: ")) return {"user", "the user's strategy " + why.substr(6)};
  if (StartsWith(why, "derived ")) return {"derived", why.substr(8)};
  if (why == "data-parallel default") return {"default", "data-parallel: no strategy given"};
  return {"default", why};
}

}  // namespace

ProvenanceText DescribeProvenance(const std::string& search_why, const std::string& partition_why) {
  return search_why.empty() ? FromPartition(partition_why) : FromSearch(search_why);
}

}  // namespace shardscope

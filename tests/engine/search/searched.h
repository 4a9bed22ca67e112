// A model builder with a search's strategies written into its annotations, for the law tests.
#pragma once

#include "law.h"
#include "shardscope/search.h"

namespace shardscope::testing_law {

inline BuildFn Searched(BuildFn build, SearchMode mode, int devices) {
  return [build, mode, devices]() -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, build());
    SearchOptions o;
    o.mode = mode;
    o.devices = devices;
    SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult r, SearchStrategies(m.graph, o));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(r, &m.graph));
    return m;
  };
}

}  // namespace shardscope::testing_law

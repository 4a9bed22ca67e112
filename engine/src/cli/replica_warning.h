// Strategies that cover fewer devices than the run: semi_auto runs those operators
// replicated over the rest (a "rep" mesh axis), which a user should hear about.
#pragma once

#include <string>

#include "shardscope/graph.h"
#include "shardscope/partition.h"

namespace shardscope::cli {

// "" when every forward operator's strategy spans all of `program`'s devices; otherwise one
// line per replica factor naming it, the devices covered and the operators (at most five).
std::string ReplicaWarning(const Graph& graph, const DistProgram& program);

}  // namespace shardscope::cli

// ReplicaWarning (replica_warning.h).
#include "cli/replica_warning.h"

#include <map>
#include <vector>

namespace shardscope::cli {

std::string ReplicaWarning(const Graph& graph, const DistProgram& program) {
  std::map<int64_t, std::vector<std::string>> by_factor;  // replica factor -> operators
  for (const Node& n : graph.nodes()) {
    if (n.is_backward || n.id >= static_cast<NodeId>(program.strategies.size())) continue;
    const DeviceMesh& mesh = program.strategies[n.id].mesh;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      if (mesh.names()[a] == "rep" && mesh.shape()[a] > 1)
        by_factor[mesh.shape()[a]].push_back(n.name);
    }
  }
  std::string out;
  for (const auto& [factor, names] : by_factor) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 5; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 5) list += ", … " + std::to_string(names.size() - 5) + " more";
    out += "warning: " + std::to_string(names.size()) + " operator(s) have strategies over " +
           std::to_string(program.devices / factor) + " of the " + std::to_string(program.devices) +
           " devices and run replicated x" + std::to_string(factor) + " over the rest: " + list +
           " (write strategies over all the devices, or let a search choose, to use them)\n";
  }
  return out;
}

}  // namespace shardscope::cli

// Why each step of a plan is there, in words (the reasons of RedistStep), and axis names.

#include <algorithm>
#include <string>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope::redist_internal {

std::string AxesName(const DeviceMesh& mesh, const std::vector<int>& axes) {
  std::string out;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i) out += '.';
    out += mesh.axis_name(axes[i]);
  }
  return out.empty() ? "-" : out;
}

namespace {

bool TargetSplitsDimOver(const ReasonContext& c, int axis, int dim) {
  if (!c.target) return false;
  const std::vector<int>& list = (*c.target)[dim];
  return std::find(list.begin(), list.end(), axis) != list.end();
}

bool TargetUsesAxis(const ReasonContext& c, int axis) {
  if (!c.target) return false;
  for (size_t d = 0; d < c.target->size(); ++d) {
    if (TargetSplitsDimOver(c, axis, static_cast<int>(d))) return true;
  }
  return false;
}

}  // namespace

std::string SliceReason(const ReasonContext& c, int axis, int dim) {
  const std::string ax = c.mesh->axis_name(axis);
  const std::string part = std::to_string(c.mesh->axis_size(axis));
  std::string out;
  out.reserve(160);
  if (TargetSplitsDimOver(c, axis, dim)) {
    out += "the target splits dimension ";
    out += std::to_string(dim);
    out += " over ";
    out += ax;
    out += ", which holds replicas here: each rank keeps its 1/";
    out += part;
    out += " part (no traffic); slicing first shrinks what later steps move";
    return out;
  }
  out += "keep only the 1/";
  out += part;
  out += " of dimension ";
  out += std::to_string(dim);
  out += " that this rank's ";
  out += ax;
  out += " index selects (no traffic), so that the following steps move less data";
  return out;
}

std::string GatherReason(const ReasonContext& c, int axis, int dim) {
  const std::string& ax = c.mesh->axis_name(axis);
  std::string out;
  out.reserve(200);
  out += "the target does not split dimension ";
  out += std::to_string(dim);
  out += " over ";
  out += ax;
  if (c.target && !TargetUsesAxis(c, axis)) {
    out += " (it holds replicas along ";
    out += ax;
    out += ')';
  }
  out += ": gather the ";
  out += std::to_string(c.mesh->axis_size(axis));
  out += " blocks along ";
  out += ax;
  out += "; gathering last means no rank receives data it will drop";
  return out;
}

std::string AllToAllReason(const ReasonContext& c, const std::vector<int>& axes, int dim,
                           int dim_to) {
  const std::string ax = AxesName(*c.mesh, axes);
  std::string out;
  out.reserve(220);
  out += "the split over ";
  out += ax;
  out += " moves from dimension ";
  out += std::to_string(dim);
  out += " to dimension ";
  out += std::to_string(dim_to);
  out += ": one all-to-all along ";
  out += ax;
  out += " (each rank keeps 1/";
  out += std::to_string(c.mesh->GroupSize(axes));
  out += " of its shard and exchanges the rest, never holding more than one shard)";
  return out;
}

std::string ReduceScatterReason(const ReasonContext& c, int axis, int dim) {
  const std::string& ax = c.mesh->axis_name(axis);
  std::string out;
  out.reserve(160);
  out += "the tensor is a partial sum over ";
  out += ax;
  if (TargetSplitsDimOver(c, axis, dim)) {
    out += " and the target splits dimension ";
    out += std::to_string(dim);
    out += " over ";
    out += ax;
    out += ": reduce and scatter in one collective";
    return out;
  }
  out += ": reduce-scatter along dimension ";
  out += std::to_string(dim);
  out +=
      " (half the traffic of an all-reduce); the blocks are re-assembled later at the lower "
      "bound";
  return out;
}

std::string ZeroFillReason() {
  return "the target is a partial sum over axes the source is not partial over: the ranks "
         "with index 0 along them keep the values, the others hold zeros (no traffic)";
}

}  // namespace shardscope::redist_internal

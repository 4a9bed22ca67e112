// A plan's own methods (redistribution.h): step kind names, the lazy transfer and group lists,
// the plan's predicted seconds, and its text and JSON forms.

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "redistribution_internal.h"
#include "shardscope/base/format.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope {

const char* RedistStepKindName(RedistStep::Kind kind) {
  switch (kind) {
    case RedistStep::Kind::kLocalSlice:
      return "local slice";
    case RedistStep::Kind::kAllGather:
      return "all-gather";
    case RedistStep::Kind::kAllToAll:
      return "all-to-all";
    case RedistStep::Kind::kReduceScatter:
      return "reduce-scatter";
    case RedistStep::Kind::kAllReduce:
      return "all-reduce";
    case RedistStep::Kind::kPermute:
      return "permute";
    case RedistStep::Kind::kLocalReshape:
      return "local reshape";
  }
  return "?";
}

std::string RedistStep::KindName() const {
  if (kind == Kind::kAllToAll && dim < 0) return "all-to-all-v";
  if (kind == Kind::kReduceScatter && dim < 0) return "reduce-scatter-v";
  if (kind == Kind::kAllReduce && !transfers.empty()) return "all-reduce (direct)";
  return RedistStepKindName(kind);
}

int RedistPlan::CountSteps(RedistStep::Kind kind) const {
  int n = 0;
  for (const RedistStep& s : steps) n += s.kind == kind;
  return n;
}

double PlanSeconds(const RedistPlan& plan, const CostModel& cost) {
  double t = 0;
  for (const RedistStep& s : plan.steps) {
    const double bw = cost.Bandwidth(plan.mesh, s.axes);
    t += cost.ExchangeSeconds(s.messages, static_cast<double>(s.bytes_recv_per_rank), bw);
  }
  return t;
}

RedistTransfers::RedistTransfers(std::vector<RedistTransfer> list)
    : count_(static_cast<int64_t>(list.size())) {
  if (!list.empty()) list_ = redist_detail::SharedLazyList<RedistTransfer>(std::move(list));
}

RedistTransfers RedistTransfers::Lazy(int64_t count,
                                      std::function<std::vector<RedistTransfer>()> expand) {
  RedistTransfers t;
  t.count_ = count;
  if (count > 0) t.list_ = redist_detail::SharedLazyList<RedistTransfer>(std::move(expand));
  return t;
}

const std::vector<RedistTransfer>& RedistTransfers::list() const {
  const std::vector<RedistTransfer>& out = list_.list();
  assert(static_cast<int64_t>(out.size()) == count_);
  return out;
}

RedistGroups::RedistGroups(std::vector<Group> list) : empty_(list.empty()) {
  if (!list.empty()) list_ = redist_detail::SharedLazyList<Group>(std::move(list));
}

RedistGroups RedistGroups::Lazy(bool empty, std::function<std::vector<Group>()> expand) {
  RedistGroups g;
  g.empty_ = empty;
  if (!empty) g.list_ = redist_detail::SharedLazyList<Group>(std::move(expand));
  return g;
}

namespace {

std::string GroupsString(const std::vector<std::vector<int>>& groups, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < groups.size() && i < limit; ++i) {
    if (i) out += " ";
    out += "{";
    for (size_t j = 0; j < groups[i].size(); ++j) {
      if (j) out += ",";
      out += std::to_string(groups[i][j]);
    }
    out += "}";
  }
  if (groups.size() > limit) out += " ... (" + std::to_string(groups.size()) + " groups)";
  return out;
}

}  // namespace

std::string RedistPlan::ToString() const {
  std::ostringstream os;
  os << "redistribution " << from.ToString() << " -> " << to.ToString() << "  (shape "
     << ShapeToString(from.shape()) << ", " << element_bytes << " B/element)\n";
  os << "  from " << from.mesh().ToString() << "  to " << to.mesh().ToString() << "\n";
  if (!meshes_unified) {
    os << "  meshes not unifiable: planned on the source mesh with irregular exchanges\n";
  } else if (!(mesh == from.mesh() && mesh == to.mesh())) {
    os << "  planned on unified " << mesh.ToString() << "\n";
  }
  if (steps.empty()) os << "  (no steps: every rank already holds its target shard)\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const RedistStep& s = steps[i];
    os << "  " << (i + 1) << ". " << s.KindName();
    if (!s.axis_names.empty()) {
      os << " along ";
      for (size_t k = 0; k < s.axis_names.size(); ++k) os << (k ? "." : "") << s.axis_names[k];
    }
    if (s.dim >= 0) os << ", dim " << s.dim;
    if (s.dim_to >= 0) os << " -> " << s.dim_to;
    os << "  => " << s.after.ToString() << "\n";
    if (!s.groups.empty()) os << "     groups " << GroupsString(s.groups.list()) << "\n";
    if (s.bytes_recv_per_rank || s.bytes_sent_per_rank) {
      os << "     recv " << FormatBytes(s.bytes_recv_per_rank) << "/rank, sent "
         << FormatBytes(s.bytes_sent_per_rank) << "/rank (max), " << s.messages << " messages, "
         << FormatSeconds(s.seconds) << "\n";
    }
    if (!s.transfers.empty()) os << "     " << s.transfers.size() << " transfers\n";
    if (!s.zero_ranks.empty()) os << "     " << s.zero_ranks.size() << " ranks become zeros\n";
    os << "     why: " << s.reason << "\n";
  }
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f",
                lower_bound_bytes ? static_cast<double>(planned_bytes) / lower_bound_bytes
                                  : (planned_bytes ? INFINITY : 1.0));
  os << "  planned " << FormatBytes(planned_bytes) << "/rank (" << FormatBytes(total_planned_bytes)
     << " in all), lower bound " << FormatBytes(lower_bound_bytes) << "/rank ("
     << FormatBytes(total_lower_bound_bytes) << "), ratio " << ratio
     << (byte_optimal ? ", byte-optimal" : ", above the bound on some rank") << "; predicted "
     << FormatSeconds(predicted_seconds) << "\n";
  return os.str();
}

std::string RedistPlan::ToJson() const {
  using nlohmann::json;
  auto layout_json = [](const Layout& l) {
    return json{{"layout", l.ToString()}, {"spec", l.ToSpec()}, {"mesh", l.mesh().ToString()}};
  };
  json j;
  j["from"] = layout_json(from);
  j["to"] = layout_json(to);
  j["shape"] = from.shape();
  j["mesh"] = mesh.ToString();
  j["meshes_unified"] = meshes_unified;
  j["element_bytes"] = element_bytes;
  j["planned_bytes"] = planned_bytes;
  j["lower_bound_bytes"] = lower_bound_bytes;
  j["total_planned_bytes"] = total_planned_bytes;
  j["total_lower_bound_bytes"] = total_lower_bound_bytes;
  j["recv_bytes"] = recv_bytes;
  j["lower_bound"] = lower_bound;
  j["byte_optimal"] = byte_optimal;
  j["bounded_search"] = bounded_search;
  j["bound_slack_bytes"] = bound_slack_bytes;
  j["predicted_seconds"] = predicted_seconds;
  json steps_json = json::array();
  for (const RedistStep& s : steps) {
    json st;
    st["kind"] = s.KindName();
    st["axes"] = s.axis_names;
    st["dim"] = s.dim;
    st["dim_to"] = s.dim_to;
    st["groups"] = s.groups.list();
    st["bytes_sent_per_rank"] = s.bytes_sent_per_rank;
    st["bytes_recv_per_rank"] = s.bytes_recv_per_rank;
    st["bytes_sent"] = s.bytes_sent;
    st["bytes_recv"] = s.bytes_recv;
    st["messages"] = s.messages;
    st["seconds"] = s.seconds;
    st["after"] = layout_json(s.after);
    st["reason"] = s.reason;
    if (!s.transfers.empty()) {
      json ts = json::array();
      for (const RedistTransfer& t : s.transfers) {
        ts.push_back({{"src", t.src}, {"dst", t.dst}, {"offset", t.offset}, {"extent", t.extent}});
      }
      st["transfers"] = ts;
    }
    if (!s.zero_ranks.empty()) st["zero_ranks"] = s.zero_ranks;
    steps_json.push_back(std::move(st));
  }
  j["steps"] = std::move(steps_json);
  return j.dump();
}

}  // namespace shardscope
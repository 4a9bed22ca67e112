#include "shardscope/store/run_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "shardscope/base/format.h"
#include "shardscope/store/display_text.h"
#include "shardscope/store/figures.h"

namespace shardscope::store {
namespace {

using Json = nlohmann::ordered_json;

// A redistribution's identity across runs: what it feeds, not its id.
using RedistKey = std::tuple<std::string, std::string, int64_t, bool>;

struct Side {
  RunSideSummary summary;
  std::map<std::string, std::string> strategies;  // forward operators by name
  std::map<RedistKey, std::vector<const RedistributionRecord*>> redists;
  std::vector<RedistributionRecord> records;
};

std::string StepKinds(const RedistributionRecord& r) {
  std::string text;
  for (const auto& s : r.steps) text += (text.empty() ? "" : ", ") + s.kind;
  return text.empty() ? "(no steps)" : text;
}

Result<Side> ReadSide(const RunReader& r) {
  Side side;
  RunSideSummary& s = side.summary;
  SHARDSCOPE_ASSIGN_OR_RETURN(RunInfo run, r.Run());
  s.name = run.name;
  s.path = r.path();
  s.mode = run.mode;
  s.search = run.search;
  s.status = RunStatusName(run.status);
  s.devices = run.devices;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ops, r.Operators(false));
  std::map<int64_t, std::string> op_names;
  for (const auto& o : ops) {
    op_names[o.id] = o.name;
    if (!o.is_backward) {
      side.strategies[o.name] = o.worker != kNone && o.strategy.empty()
                                    ? "worker " + std::to_string(o.worker)
                                    : o.strategy;
      ++s.operators;
    }
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(auto tensors, r.Tensors());
  std::map<int64_t, std::string> tensor_names;
  for (const auto& t : tensors) tensor_names[t.id] = t.name;
  SHARDSCOPE_ASSIGN_OR_RETURN(side.records, r.Redistributions());
  s.redistributions = static_cast<int64_t>(side.records.size());
  for (const auto& d : side.records) {
    RedistKey key{tensor_names.count(d.tensor_id) ? tensor_names[d.tensor_id] : "",
                  op_names.count(d.consumer_op) ? op_names[d.consumer_op] : "", d.consumer_input,
                  d.is_backward};
    side.redists[key].push_back(&d);
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(auto sends, r.SendRecvs());
  s.bytes_per_step = PlannedRecvBytesPerStep(run.devices, side.records, sends);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto steps, r.Steps(std::numeric_limits<int64_t>::min(),
                                                  std::numeric_limits<int64_t>::max(), true));
  s.steps = static_cast<int64_t>(steps.size());
  double seconds = 0, compute = 0, comm = 0;
  for (const auto& step : steps) {
    const StepFigures f = FiguresOf(step);
    seconds += f.seconds;
    compute += f.compute_seconds;
    comm += f.comm_seconds;
    s.step_numbers.push_back(step.step);
    s.loss.push_back(step.loss);
    s.step_seconds.push_back(f.seconds);
    if (!std::isnan(step.loss)) {
      if (std::isnan(s.first_loss)) s.first_loss = step.loss;
      s.last_loss = step.loss;
      s.min_loss = std::isnan(s.min_loss) ? step.loss : std::min(s.min_loss, step.loss);
    }
  }
  if (!steps.empty()) {
    const double n = static_cast<double>(steps.size());
    s.mean_step_seconds = seconds / n;
    s.mean_compute_seconds = compute / n;
    s.mean_comm_seconds = comm / n;
  }
  return side;
}

RedistributionDiff Entry(const RedistKey& key, const RedistributionRecord* a,
                         const RedistributionRecord* b) {
  RedistributionDiff d;
  std::tie(d.tensor, d.consumer, d.consumer_input, d.is_backward) = key;
  d.change = a == nullptr   ? RedistributionDiff::Change::kAdded
             : b == nullptr ? RedistributionDiff::Change::kRemoved
                            : RedistributionDiff::Change::kChanged;
  const auto side = [](const RedistributionRecord* r) {
    return r == nullptr ? RedistributionDiff::Side{}
                        : RedistributionDiff::Side{r->id, r->from_layout, r->to_layout,
                                                   StepKinds(*r), r->bytes};
  };
  d.a = side(a);
  d.b = side(b);
  return d;
}

Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::string Cell(const std::string& text) {
  return EscapeControls(text.empty() ? std::string("—") : text, {.max_bytes = 200});
}

std::string Ms(double seconds) {
  if (std::isnan(seconds)) return "—";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

std::string Loss(double v) {
  if (std::isnan(v)) return "—";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

const char* ChangeName(RedistributionDiff::Change change) {
  switch (change) {
    case RedistributionDiff::Change::kAdded:
      return "added";
    case RedistributionDiff::Change::kRemoved:
      return "removed";
    default:
      return "changed";
  }
}

Result<RunDiff> DiffRuns(const RunReader& ra, const RunReader& rb) {
  SHARDSCOPE_ASSIGN_OR_RETURN(Side a, ReadSide(ra));
  SHARDSCOPE_ASSIGN_OR_RETURN(Side b, ReadSide(rb));
  RunDiff diff;
  std::map<std::string, StrategyDiff> strategies;
  for (const auto& [name, s] : a.strategies) strategies[name] = {name, s, ""};
  for (const auto& [name, s] : b.strategies) {
    auto [it, inserted] = strategies.try_emplace(name, StrategyDiff{name, "", s});
    if (!inserted) it->second.b = s;
  }
  for (auto& [name, s] : strategies) {
    const bool missing = !a.strategies.count(name) || !b.strategies.count(name);
    if (missing || s.a != s.b) diff.strategies.push_back(std::move(s));
  }
  std::map<RedistKey, bool> keys;
  for (const auto& [k, v] : a.redists) keys[k] = true;
  for (const auto& [k, v] : b.redists) keys[k] = true;
  for (const auto& [key, unused] : keys) {
    (void)unused;
    const auto ia = a.redists.find(key);
    const auto ib = b.redists.find(key);
    const size_t na = ia == a.redists.end() ? 0 : ia->second.size();
    const size_t nb = ib == b.redists.end() ? 0 : ib->second.size();
    for (size_t i = 0; i < std::max(na, nb); ++i) {
      const RedistributionRecord* ra_i = i < na ? ia->second[i] : nullptr;
      const RedistributionRecord* rb_i = i < nb ? ib->second[i] : nullptr;
      RedistributionDiff d = Entry(key, ra_i, rb_i);
      if (ra_i && rb_i && d.a.from == d.b.from && d.a.to == d.b.to && d.a.steps == d.b.steps &&
          d.a.bytes == d.b.bytes) {
        ++diff.same_redistributions;
        continue;
      }
      diff.redistributions.push_back(std::move(d));
    }
  }
  diff.a = std::move(a.summary);
  diff.b = std::move(b.summary);
  return diff;
}

std::string FormatRunDiff(const RunDiff& d) {
  std::string out;
  char line[1024];
  const auto row = [&](const char* label, const std::string& a, const std::string& b) {
    std::snprintf(line, sizeof line, "  %-22s %-28s %s\n", label, a.c_str(), b.c_str());
    out += line;
  };
  out += "runs\n";
  row("", "A: " + Cell(d.a.name), "B: " + Cell(d.b.name));
  row("file", Cell(d.a.path), Cell(d.b.path));
  row("mode, search", d.a.mode + ", " + Cell(d.a.search), d.b.mode + ", " + Cell(d.b.search));
  row("status", d.a.status, d.b.status);
  row("devices", std::to_string(d.a.devices), std::to_string(d.b.devices));
  row("operators (forward)", std::to_string(d.a.operators), std::to_string(d.b.operators));
  row("redistributions", std::to_string(d.a.redistributions), std::to_string(d.b.redistributions));
  row("planned recv / step", FormatBytes(static_cast<double>(d.a.bytes_per_step)),
      FormatBytes(static_cast<double>(d.b.bytes_per_step)));
  out += "\nloss and step time\n";
  row("steps", std::to_string(d.a.steps), std::to_string(d.b.steps));
  row("first loss", Loss(d.a.first_loss), Loss(d.b.first_loss));
  row("last loss", Loss(d.a.last_loss), Loss(d.b.last_loss));
  row("lowest loss", Loss(d.a.min_loss), Loss(d.b.min_loss));
  row("mean step time", Ms(d.a.mean_step_seconds), Ms(d.b.mean_step_seconds));
  row("  compute (max rank)", Ms(d.a.mean_compute_seconds), Ms(d.b.mean_compute_seconds));
  row("  comm (max rank)", Ms(d.a.mean_comm_seconds), Ms(d.b.mean_comm_seconds));
  out += "\nstrategies: " + std::to_string(d.strategies.size()) + " operator(s) differ\n";
  for (const auto& s : d.strategies) row(Cell(s.op).c_str(), Cell(s.a), Cell(s.b));
  out += "\nredistributions: " + std::to_string(d.redistributions.size()) + " differ, " +
         std::to_string(d.same_redistributions) + " the same\n";
  for (const auto& r : d.redistributions) {
    std::snprintf(line, sizeof line, "  %-8s %s -> %s input %lld%s\n", ChangeName(r.change),
                  Cell(r.tensor).c_str(), Cell(r.consumer).c_str(),
                  static_cast<long long>(r.consumer_input), r.is_backward ? " (backward)" : "");
    out += line;
    for (const auto* side : {&r.a, &r.b}) {
      if (side->id == kNone) continue;
      out += std::string("           ") + (side == &r.a ? "A" : "B") + ": " + Cell(side->from) +
             " -> " + Cell(side->to) + ", " + Cell(side->steps) + ", " +
             FormatBytes(static_cast<double>(side->bytes)) + "\n";
    }
  }
  return out;
}

std::string RunDiffJson(const RunDiff& d) {
  const auto side = [](const RunSideSummary& s) {
    Json j;
    j["name"] = s.name;
    j["path"] = s.path;
    j["mode"] = s.mode;
    j["search"] = s.search;
    j["status"] = s.status;
    j["devices"] = s.devices;
    j["operators"] = s.operators;
    j["redistributions"] = s.redistributions;
    j["planned_recv_bytes_per_step"] = s.bytes_per_step;
    j["steps"] = s.steps;
    j["first_loss"] = Number(s.first_loss);
    j["last_loss"] = Number(s.last_loss);
    j["min_loss"] = Number(s.min_loss);
    j["mean_step_seconds"] = Number(s.mean_step_seconds);
    j["mean_compute_seconds"] = Number(s.mean_compute_seconds);
    j["mean_comm_seconds"] = Number(s.mean_comm_seconds);
    return j;
  };
  Json j;
  j["a"] = side(d.a);
  j["b"] = side(d.b);
  j["strategies"] = Json::array();
  for (const auto& s : d.strategies)
    j["strategies"].push_back({{"op", s.op}, {"a", s.a}, {"b", s.b}});
  j["redistributions"] = Json::array();
  for (const auto& r : d.redistributions) {
    Json e;
    e["change"] = ChangeName(r.change);
    e["tensor"] = r.tensor;
    e["consumer"] = r.consumer;
    e["consumer_input"] = r.consumer_input;
    e["is_backward"] = r.is_backward;
    for (const auto* side : {&r.a, &r.b}) {
      e[side == &r.a ? "a" : "b"] = side->id == kNone ? Json(nullptr)
                                                      : Json{{"id", side->id},
                                                             {"from", side->from},
                                                             {"to", side->to},
                                                             {"steps", side->steps},
                                                             {"bytes", side->bytes}};
    }
    j["redistributions"].push_back(std::move(e));
  }
  j["same_redistributions"] = d.same_redistributions;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace shardscope::store

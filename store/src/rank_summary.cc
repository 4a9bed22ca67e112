#include "shardscope/store/rank_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "shardscope/base/format.h"
#include "shardscope/store/display_text.h"

namespace shardscope::store {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kSlowest = 10;  // instructions listed from the last timed step

struct Timing {
  double compute = 0, comm = 0, span = 0;
  // seconds and count by operator kind (compute) and by collective (redistribution steps)
  std::map<std::string, std::pair<double, int64_t>> compute_by_kind, collectives;
  std::vector<std::pair<double, std::string>> slowest;  // seconds, instruction text
  int64_t step = kNone;
};

Result<Timing> ReadTiming(const RunReader& r, int64_t rank) {
  Timing t;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto steps, r.TimedSteps());
  if (steps.empty()) return t;
  t.step = steps.back();
  SHARDSCOPE_ASSIGN_OR_RETURN(auto spans, r.InstructionSpans(t.step, t.step, rank));
  if (spans.empty()) return t;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto programs, r.Programs());
  std::vector<InstructionRecord> program;
  for (auto& p : programs)
    if (p.rank == kNone) program = std::move(p.instructions);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ops, r.Operators(false));
  std::map<int64_t, std::string> op_kind;
  for (const auto& o : ops) op_kind[o.id] = o.kind;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto redists, r.Redistributions());
  std::map<int64_t, const RedistributionRecord*> by_id;
  for (const auto& d : redists) by_id[d.id] = &d;
  for (const auto& s : spans) {
    const double secs = s.end_seconds - s.start_seconds;
    t.span = std::max(t.span, s.end_seconds);
    const InstructionRecord* in = s.ordinal >= 0 && static_cast<size_t>(s.ordinal) < program.size()
                                      ? &program[s.ordinal]
                                      : nullptr;
    std::string kind = s.kind;
    if (s.kind == "compute") {
      t.compute += secs;
      if (in != nullptr && op_kind.count(in->op_id)) kind = op_kind[in->op_id];
    } else if (s.kind == "redistribution") {
      t.comm += secs;
    } else if (in != nullptr && by_id.count(in->redistribution_id)) {
      const auto& st = by_id[in->redistribution_id]->steps;
      if (s.part >= 0 && static_cast<size_t>(s.part) < st.size()) kind = st[s.part].kind;
    }
    if (s.kind != "redistribution") {
      auto& [sum, count] = (s.kind == "compute" ? t.compute_by_kind : t.collectives)[kind];
      sum += secs;
      ++count;
    }
    if (s.part == kNone)
      t.slowest.emplace_back(secs,
                             in != nullptr ? in->text : "instruction " + std::to_string(s.ordinal));
  }
  std::stable_sort(t.slowest.begin(), t.slowest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (t.slowest.size() > kSlowest) t.slowest.resize(kSlowest);
  return t;
}

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

std::string Bytes(int64_t b) { return FormatBytes(static_cast<double>(b)); }

}  // namespace

Result<std::string> FormatRankSummary(const RunReader& r, int64_t rank, bool json) {
  SHARDSCOPE_ASSIGN_OR_RETURN(RunInfo run, r.Run());
  if (rank < 0 || rank >= run.devices) {
    return Status(StatusCode::kNotFound, r.path() + ": rank " + std::to_string(rank) +
                                             " is not in the run (ranks 0 to " +
                                             std::to_string(run.devices - 1) + ")");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(auto series, r.RankSeries(rank));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ops, r.Operators(false));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto tensors, r.Tensors());
  SHARDSCOPE_ASSIGN_OR_RETURN(Timing timing, ReadTiming(r, rank));
  const bool placed = run.search == "place";
  SHARDSCOPE_ASSIGN_OR_RETURN(auto pairs, r.SendRecvs());
  std::erase_if(pairs,
                [&](const SendRecvRecord& p) { return p.src_rank != rank && p.dst_rank != rank; });
  RankStepRecord last;
  double compute = 0, comm = 0;
  int64_t sent = 0, recv = 0;
  for (const auto& [step, f] : series) {
    compute += f.compute_seconds;
    comm += f.comm_seconds;
    sent += f.bytes_sent;
    recv += f.bytes_recv;
    last = f;
  }
  // SPMD: every rank holds a shard of every parameter; placed: the parameters of its operators.
  std::vector<const TensorRecord*> params;
  std::map<int64_t, int64_t> worker_of;  // operator id -> worker
  std::map<int64_t, std::string> tensor_name;
  for (const auto& t : tensors) tensor_name[t.id] = t.name;
  for (const auto& o : ops) worker_of[o.id] = o.worker;
  std::vector<const OperatorRecord*> placed_ops;
  for (const auto& o : ops)
    if (placed && o.worker == rank && !o.is_backward) placed_ops.push_back(&o);
  for (const auto& t : tensors) {
    if (t.kind != "parameter") continue;
    if (placed) {
      bool mine = false;
      SHARDSCOPE_ASSIGN_OR_RETURN(auto consumers, r.EdgesOfTensor(t.id));
      for (const auto& e : consumers) mine = mine || worker_of[e.dst_op] == rank;
      if (!mine) continue;
    }
    params.push_back(&t);
  }
  if (json) {
    Json j;
    j["run"] = run.name;
    j["rank"] = rank;
    j["steps"] = static_cast<int64_t>(series.size());
    j["memory"] = {{"param_bytes", last.param_bytes},
                   {"grad_bytes", last.grad_bytes},
                   {"optimizer_bytes", last.optimizer_bytes},
                   {"activation_bytes", last.activation_bytes},
                   {"peak_bytes", last.peak_bytes}};
    j["compute_seconds"] = compute;
    j["comm_seconds"] = comm;
    j["bytes_sent"] = sent;
    j["bytes_recv"] = recv;
    j["parameters"] = Json::array();
    for (const auto* t : params)
      j["parameters"].push_back({{"name", t->name}, {"shape", t->shape}, {"layout", t->layout}});
    j["operators"] = Json::array();
    for (const auto* o : placed_ops) j["operators"].push_back(o->name);
    j["crossing"] = Json::array();
    for (const auto& p : pairs) {
      j["crossing"].push_back({{"tensor", tensor_name[p.tensor_id]},
                               {"from", p.src_rank},
                               {"to", p.dst_rank},
                               {"bytes_per_step", p.bytes},
                               {"is_backward", p.is_backward}});
    }
    if (timing.step != kNone) {
      Json tj;
      tj["step"] = timing.step;
      tj["span_seconds"] = timing.span;
      tj["compute_seconds"] = timing.compute;
      tj["comm_seconds"] = timing.comm;
      const auto table = [](const std::map<std::string, std::pair<double, int64_t>>& m) {
        Json out = Json::object();
        for (const auto& [k, v] : m) out[k] = {{"seconds", v.first}, {"count", v.second}};
        return out;
      };
      tj["compute_by_kind"] = table(timing.compute_by_kind);
      tj["collectives"] = table(timing.collectives);
      j["timing"] = std::move(tj);
    }
    return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  std::string out;
  char line[512];
  out += "rank " + std::to_string(rank) + " of " + EscapeControls(run.name) + " (" +
         std::to_string(run.devices) + " devices" + (placed ? ", placed: worker" : "") + ")\n";
  if (series.empty()) {
    out +=
        "\nmemory: no training steps recorded (plan runs: `shardscope plan` prints the "
        "predicted memory per device)\n";
  } else {
    out += "\nmemory at step " + std::to_string(series.back().first) + "\n";
    const auto mem = [&](const char* what, int64_t b) {
      std::snprintf(line, sizeof line, "  %-13s %12s  %5.1f %%\n", what, Bytes(b).c_str(),
                    last.peak_bytes > 0
                        ? 100.0 * static_cast<double>(b) / static_cast<double>(last.peak_bytes)
                        : 0.0);
      out += line;
    };
    mem("parameters", last.param_bytes);
    mem("gradients", last.grad_bytes);
    mem("optimizer", last.optimizer_bytes);
    mem("activations", last.activation_bytes);
    mem("peak", last.peak_bytes);
    out += "\nover " + std::to_string(series.size()) + " steps: compute " + Ms(compute) +
           ", communication " + Ms(comm) + ", sent " + Bytes(sent) + ", received " + Bytes(recv) +
           "\n";
  }
  out += "\nparameters (" + std::to_string(params.size()) + ")" +
         (placed ? "" : ": a shard of each, by its layout") + "\n";
  for (const auto* t : params) {
    std::string shape;
    for (int64_t d : t->shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    std::snprintf(line, sizeof line, "  %-32s %-14s %s\n",
                  EscapeControls(t->name, {.max_bytes = 200}).c_str(), shape.c_str(),
                  EscapeControls(t->layout, {.max_bytes = 200}).c_str());
    out += line;
  }
  if (placed) {
    out += "\noperators on this worker (" + std::to_string(placed_ops.size()) + ")\n";
    for (const auto* o : placed_ops) out += "  " + EscapeControls(o->name) + "\n";
    out += "\ncrossing to or from this worker (" + std::to_string(pairs.size()) + ")\n";
    for (const auto& p : pairs) {
      std::snprintf(line, sizeof line, "  %-32s %lld -> %lld  %s per step%s\n",
                    EscapeControls(tensor_name[p.tensor_id], {.max_bytes = 200}).c_str(),
                    static_cast<long long>(p.src_rank), static_cast<long long>(p.dst_rank),
                    Bytes(p.bytes).c_str(), p.is_backward ? " (gradient)" : "");
      out += line;
    }
  }
  if (timing.step == kNone) {
    out += "\ntiming: no per-instruction timing recorded (train --timing-every)\n";
    return out;
  }
  out += "\ntiming of step " + std::to_string(timing.step) + ": " + Ms(timing.span) + ", compute " +
         Ms(timing.compute) + ", redistributions " + Ms(timing.comm) + "\n";
  for (const auto* by : {&timing.compute_by_kind, &timing.collectives}) {
    for (const auto& [kind, v] : *by) {
      std::snprintf(line, sizeof line, "  %-30s %12s  x%lld\n",
                    EscapeControls(kind, {.max_bytes = 100}).c_str(), Ms(v.first).c_str(),
                    static_cast<long long>(v.second));
      out += line;
    }
  }
  out += "slowest instructions\n";
  for (const auto& [secs, text] : timing.slowest)
    out += "  " + Ms(secs) + "  " + EscapeControls(text, {.max_bytes = 200}) + "\n";
  return out;
}

}  // namespace shardscope::store

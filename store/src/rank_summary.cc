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

// Names each span of `rank` in `step` and sums compute against communication.
Result<RankTiming> ReadTiming(const RunReader& r, int64_t rank, int64_t step) {
  RankTiming t;
  SHARDSCOPE_ASSIGN_OR_RETURN(t.timed_steps, r.TimedSteps());
  if (t.timed_steps.empty()) return t;
  if (step == kNone) step = t.timed_steps.back();
  if (!std::binary_search(t.timed_steps.begin(), t.timed_steps.end(), step)) return t;
  t.step = step;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto spans, r.InstructionSpans(t.step, t.step, rank));
  if (spans.empty()) return t;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto programs, r.Programs());
  std::vector<InstructionRecord> program;
  for (auto& p : programs)
    if (p.rank == kNone) program = std::move(p.instructions);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ops, r.Operators(false));
  std::map<int64_t, const OperatorRecord*> op_of;
  for (const auto& o : ops) op_of[o.id] = &o;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto redists, r.Redistributions());
  std::map<int64_t, const RedistributionRecord*> by_id;
  for (const auto& d : redists) by_id[d.id] = &d;
  for (const auto& s : spans) {
    const double secs = s.end_seconds - s.start_seconds;
    t.span = std::max(t.span, s.end_seconds);
    const InstructionRecord* in = s.ordinal >= 0 && static_cast<size_t>(s.ordinal) < program.size()
                                      ? &program[s.ordinal]
                                      : nullptr;
    RankSpan named{.ordinal = s.ordinal,
                   .part = s.part,
                   .kind = s.kind,
                   .name = s.kind,
                   .text = in != nullptr ? in->text : "instruction " + std::to_string(s.ordinal),
                   .start_seconds = s.start_seconds,
                   .end_seconds = s.end_seconds};
    std::string kind = s.kind;
    if (s.kind == "compute") {
      t.compute += secs;
      if (in != nullptr && op_of.count(in->op_id)) {
        kind = op_of[in->op_id]->kind;
        named.name = op_of[in->op_id]->name;
      }
    } else if (s.kind == "redistribution") {
      t.comm += secs;
      if (in != nullptr) named.name = "redistribute " + std::to_string(in->redistribution_id);
    } else if (s.kind == "bucket") {  // gradient all-reduces of a bucket, one call
      t.comm += secs;
      kind = named.name = SpanCollectiveName(s.kind);
      if (in != nullptr) named.text = "gradient bucket all-reduce, up to " + in->text;
    } else if (s.kind == "grad_scatter" || s.kind == "param_gather") {  // ZeRO 2/3
      t.comm += secs;
      kind = named.name = SpanCollectiveName(s.kind);
      if (in != nullptr)
        named.text = named.name + (s.kind == "grad_scatter" ? " after " : " before ") + in->text;
    } else if (in != nullptr && by_id.count(in->redistribution_id)) {
      const auto& st = by_id[in->redistribution_id]->steps;
      if (s.part >= 0 && static_cast<size_t>(s.part) < st.size()) kind = st[s.part].kind;
      named.name = kind;
    }
    if (s.kind != "redistribution") {
      auto& [sum, count] = (s.kind == "compute" ? t.compute_by_kind : t.collectives)[kind];
      sum += secs;
      ++count;
    }
    if (s.part == kNone) t.slowest.emplace_back(secs, named.text);
    t.spans.push_back(std::move(named));
  }
  std::stable_sort(t.slowest.begin(), t.slowest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (t.slowest.size() > kSlowest) t.slowest.resize(kSlowest);
  std::stable_sort(t.spans.begin(), t.spans.end(),
                   [](const auto& a, const auto& b) { return a.start_seconds < b.start_seconds; });
  return t;
}

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

std::string Bytes(int64_t b) { return FormatBytes(static_cast<double>(b)); }

std::string TensorName(const RankSummary& s, int64_t id) {
  auto it = s.tensor_names.find(id);
  return it != s.tensor_names.end() ? it->second : "tensor " + std::to_string(id);
}

}  // namespace

std::string SpanCollectiveName(const std::string& kind) {
  if (kind == "bucket") return "all-reduce (gradient bucket)";
  if (kind == "grad_scatter") return "reduce-scatter (ZeRO bucket)";
  if (kind == "param_gather") return "all-gather (ZeRO parameter)";
  return "";
}

std::vector<MemoryRow> MemoryRows(const RankSummary& s) {
  return {{"parameters", "param_bytes", s.last.param_bytes},
          {"gradients", "grad_bytes", s.last.grad_bytes},
          {"optimizer", "optimizer_bytes", s.last.optimizer_bytes},
          {"activations", "activation_bytes", s.last.activation_bytes},
          {"peak", "peak_bytes", s.last.peak_bytes}};
}

Result<RankSummary> ReadRankSummary(const RunReader& r, int64_t rank, int64_t timed_step) {
  RankSummary s;
  SHARDSCOPE_ASSIGN_OR_RETURN(s.run, r.Run());
  const RunInfo& run = s.run;
  if (rank < 0 || rank >= run.devices) {
    return Status(StatusCode::kNotFound, r.path() + ": rank " + std::to_string(rank) +
                                             " is not in the run (ranks 0 to " +
                                             std::to_string(run.devices - 1) + ")");
  }
  s.rank = rank;
  SHARDSCOPE_ASSIGN_OR_RETURN(auto series, r.RankSeries(rank));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ops, r.Operators(false));
  SHARDSCOPE_ASSIGN_OR_RETURN(auto tensors, r.Tensors());
  SHARDSCOPE_ASSIGN_OR_RETURN(s.timing, ReadTiming(r, rank, timed_step));
  s.placed = run.search == "place";
  SHARDSCOPE_ASSIGN_OR_RETURN(s.crossing, r.SendRecvs());
  std::erase_if(s.crossing,
                [&](const SendRecvRecord& p) { return p.src_rank != rank && p.dst_rank != rank; });
  s.steps = static_cast<int64_t>(series.size());
  for (const auto& [step, f] : series) {
    s.compute_seconds += f.compute_seconds;
    s.comm_seconds += f.comm_seconds;
    s.bytes_sent += f.bytes_sent;
    s.bytes_recv += f.bytes_recv;
    s.last = f;
    s.last_step = step;
  }
  // SPMD: every rank holds a shard of every parameter; placed: the parameters of its operators.
  std::map<int64_t, int64_t> worker_of;  // operator id -> worker
  for (const auto& t : tensors) s.tensor_names[t.id] = t.name;
  for (const auto& o : ops) worker_of[o.id] = o.worker;
  for (const auto& o : ops)
    if (s.placed && o.worker == rank && !o.is_backward) s.operators.push_back(o.name);
  for (const auto& t : tensors) {
    if (t.kind != "parameter") continue;
    if (s.placed) {
      bool mine = false;
      SHARDSCOPE_ASSIGN_OR_RETURN(auto consumers, r.EdgesOfTensor(t.id));
      for (const auto& e : consumers) mine = mine || worker_of[e.dst_op] == rank;
      if (!mine) continue;
    }
    s.parameters.push_back(t);
  }
  return s;
}

std::string TimedStepsText(const std::vector<int64_t>& steps) {
  constexpr size_t kListed = 8;
  std::string text;
  for (size_t i = 0; i < steps.size() && i < kListed; ++i)
    text += (i ? ", " : "") + std::to_string(steps[i]);
  if (steps.size() > kListed)
    text +=
        ", ... " + std::to_string(steps.back()) + " (" + std::to_string(steps.size()) + " steps)";
  return text;
}

Result<std::string> FormatRankSummary(const RunReader& r, int64_t rank, bool json,
                                      int64_t timed_step) {
  SHARDSCOPE_ASSIGN_OR_RETURN(RankSummary s, ReadRankSummary(r, rank, timed_step));
  if (timed_step != kNone && s.timing.step != timed_step) {
    const auto& timed = s.timing.timed_steps;
    return Status(StatusCode::kNotFound,
                  r.path() + ": step " + std::to_string(timed_step) + " was not timed (" +
                      (timed.empty() ? std::string("no step was: train --timing-every N times some")
                                     : "timed steps: " + TimedStepsText(timed)) +
                      ")");
  }
  return FormatRankSummary(s, json);
}

std::string FormatRankSummary(const RankSummary& s, bool json) {
  const RunInfo& run = s.run;
  const int64_t rank = s.rank;
  const bool placed = s.placed;
  const RankStepRecord& last = s.last;
  const RankTiming& timing = s.timing;
  if (json) {
    Json j;
    j["run"] = run.name;
    j["rank"] = rank;
    j["steps"] = s.steps;
    j["memory"] = Json::object();
    for (const MemoryRow& m : MemoryRows(s)) j["memory"][m.json_key] = m.bytes;
    j["compute_seconds"] = s.compute_seconds;
    j["comm_seconds"] = s.comm_seconds;
    j["bytes_sent"] = s.bytes_sent;
    j["bytes_recv"] = s.bytes_recv;
    j["parameters"] = Json::array();
    for (const auto& t : s.parameters)
      j["parameters"].push_back({{"name", t.name}, {"shape", t.shape}, {"layout", t.layout}});
    j["operators"] = Json::array();
    for (const auto& o : s.operators) j["operators"].push_back(o);
    j["crossing"] = Json::array();
    for (const auto& p : s.crossing) {
      j["crossing"].push_back({{"tensor", TensorName(s, p.tensor_id)},
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
  if (s.steps == 0) {
    out +=
        "\nmemory: no training steps recorded (plan runs: `shardscope plan` prints the "
        "predicted memory per device)\n";
  } else {
    out += "\nmemory at step " + std::to_string(s.last_step) + "\n";
    const auto mem = [&](const char* what, int64_t b) {
      std::snprintf(line, sizeof line, "  %-13s %12s  %5.1f %%\n", what, Bytes(b).c_str(),
                    last.peak_bytes > 0
                        ? 100.0 * static_cast<double>(b) / static_cast<double>(last.peak_bytes)
                        : 0.0);
      out += line;
    };
    for (const MemoryRow& m : MemoryRows(s)) mem(m.what.c_str(), m.bytes);
    out += "\nover " + std::to_string(s.steps) + " steps: compute " + Ms(s.compute_seconds) +
           ", communication " + Ms(s.comm_seconds) + ", sent " + Bytes(s.bytes_sent) +
           ", received " + Bytes(s.bytes_recv) + "\n";
  }
  out += "\nparameters (" + std::to_string(s.parameters.size()) + ")" +
         (placed ? "" : ": a shard of each, by its layout") + "\n";
  for (const auto& t : s.parameters) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    std::snprintf(line, sizeof line, "  %-32s %-14s %s\n",
                  EscapeControls(t.name, {.max_bytes = 200}).c_str(), shape.c_str(),
                  EscapeControls(t.layout, {.max_bytes = 200}).c_str());
    out += line;
  }
  if (placed) {
    out += "\noperators on this worker (" + std::to_string(s.operators.size()) + ")\n";
    for (const auto& o : s.operators) out += "  " + EscapeControls(o) + "\n";
    out += "\ncrossing to or from this worker (" + std::to_string(s.crossing.size()) + ")\n";
    for (const auto& p : s.crossing) {
      std::snprintf(line, sizeof line, "  %-32s %lld -> %lld  %s per step%s\n",
                    EscapeControls(TensorName(s, p.tensor_id), {.max_bytes = 200}).c_str(),
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
         Ms(timing.compute) + ", communication " + Ms(timing.comm) + "\n";
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

// `shardscope trace RUN --out trace.json`: a run's measured timelines in the Chrome trace-event
// format (JSON object form), which Perfetto's UI and chrome://tracing open.
//
// One process (the run), one thread track per rank (SPMD) or worker (placed). SPMD runs: per
// timed step (instruction_span) a "step N" slice holding each instruction as a slice
// (compute: the operator; redistribution: its collectives nested inside). Placed runs: the
// pipeline timeline's phases (pipeline_span). Timed steps are laid end to end.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "shardscope/store/rank_summary.h"
#include "shardscope/store/reader.h"

namespace shardscope::cli {
namespace {

using Json = nlohmann::ordered_json;

struct TraceOptions {
  std::string run;
  std::string out;
  int64_t rank = -1;  // one rank only
};

constexpr double kMicros = 1e6;  // trace-event times are microseconds

Json Slice(const std::string& name, const char* cat, int64_t tid, double start, double end,
           Json args) {
  Json e;
  e["name"] = name;
  e["cat"] = cat;
  e["ph"] = "X";
  e["ts"] = start * kMicros;
  e["dur"] = std::max(0.0, end - start) * kMicros;
  e["pid"] = 1;
  e["tid"] = tid;
  e["args"] = std::move(args);
  return e;
}

Json Metadata(const char* what, int64_t tid, Json args) {
  Json e;
  e["name"] = what;
  e["ph"] = "M";
  e["pid"] = 1;
  if (tid >= 0) e["tid"] = tid;
  e["args"] = std::move(args);
  return e;
}

struct RunTables {
  store::RunInfo run;
  std::vector<store::InstructionRecord> program;  // the SPMD program, by ordinal
  std::map<int64_t, store::RedistributionRecord> redistributions;
  std::map<int64_t, std::string> operators;  // id -> name
  std::vector<store::InstructionSpanRecord> spans;
  std::vector<store::PipelineSpanRecord> pipeline;
};

Result<RunTables> ReadTables(const store::RunReader& r, int64_t rank) {
  RunTables t;
  SHARDSCOPE_ASSIGN_OR_RETURN(t.run, r.Run());
  SHARDSCOPE_ASSIGN_OR_RETURN(auto programs, r.Programs());
  for (auto& p : programs)
    if (p.rank == store::kNone) t.program = std::move(p.instructions);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto redists, r.Redistributions());
  for (auto& d : redists) t.redistributions[d.id] = std::move(d);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto ops, r.Operators(false));
  for (auto& o : ops) t.operators[o.id] = o.name;
  SHARDSCOPE_ASSIGN_OR_RETURN(t.spans,
                              r.InstructionSpans(std::numeric_limits<int64_t>::min(),
                                                 std::numeric_limits<int64_t>::max(), rank));
  SHARDSCOPE_ASSIGN_OR_RETURN(t.pipeline, r.PipelineSpans());
  if (rank >= 0) std::erase_if(t.pipeline, [&](const auto& p) { return p.rank != rank; });
  return t;
}

// Name and arguments of one instruction span.
std::pair<std::string, Json> Describe(const RunTables& t, const store::InstructionSpanRecord& s) {
  Json args;
  args["step"] = s.step;
  args["instruction"] = s.ordinal;
  const store::InstructionRecord* in =
      s.ordinal >= 0 && static_cast<size_t>(s.ordinal) < t.program.size() ? &t.program[s.ordinal]
                                                                          : nullptr;
  if (in == nullptr) return {"instruction " + std::to_string(s.ordinal), args};
  args["text"] = in->text;
  if (s.kind == "compute") {
    auto op = t.operators.find(in->op_id);
    return {op != t.operators.end() ? op->second : in->text, args};
  }
  if (const std::string collective = store::SpanCollectiveName(s.kind); !collective.empty())
    return {collective, args};
  auto r = t.redistributions.find(in->redistribution_id);
  if (r == t.redistributions.end()) return {in->text, args};
  args["redistribution"] = r->first;
  args["from"] = r->second.from_layout;
  args["to"] = r->second.to_layout;
  if (s.kind == "collective" && s.part >= 0 &&
      static_cast<size_t>(s.part) < r->second.steps.size()) {
    const store::RedistStepRecord& step = r->second.steps[s.part];
    args["bytes_sent_max"] = step.bytes_sent_max;
    args["bytes_recv_max"] = step.bytes_recv_max;
    args["axes"] = step.axis_names;
    args["layout_after"] = step.layout_after;
    return {step.kind, args};
  }
  args["bytes"] = r->second.bytes;
  args["reason"] = r->second.reason;
  return {"redistribute " + std::to_string(r->first), args};
}

Json BuildTrace(const RunTables& t) {
  Json events = Json::array();
  events.push_back(Metadata("process_name", -1, {{"name", t.run.name}}));
  std::map<int64_t, bool> tracks;
  for (const auto& s : t.spans) tracks[s.rank] = true;
  for (const auto& p : t.pipeline) tracks[p.rank] = true;
  const bool placed = t.spans.empty() && !t.pipeline.empty();
  for (const auto& [rank, unused] : tracks) {
    (void)unused;
    events.push_back(Metadata("thread_name", rank,
                              {{"name", (placed ? "worker " : "rank ") + std::to_string(rank)}}));
    events.push_back(Metadata("thread_sort_index", rank, {{"sort_index", rank}}));
  }
  // Steps end to end: each begins where the previous one's last span ended, plus a gap.
  std::map<int64_t, double> step_length;
  for (const auto& s : t.spans) step_length[s.step] = std::max(step_length[s.step], s.end_seconds);
  for (const auto& p : t.pipeline)
    step_length[p.step] = std::max(step_length[p.step], p.end_seconds);
  std::map<int64_t, double> origin;
  double at = 0;
  for (const auto& [step, length] : step_length) {
    origin[step] = at;
    at += length * 1.05;
  }
  std::map<std::pair<int64_t, int64_t>, double> rank_end;  // (step, rank) -> last end
  for (const auto& s : t.spans) {
    auto& end = rank_end[{s.step, s.rank}];
    end = std::max(end, s.end_seconds);
  }
  for (const auto& [key, end] : rank_end) {
    events.push_back(Slice("step " + std::to_string(key.first), "step", key.second,
                           origin[key.first], origin[key.first] + end, {{"step", key.first}}));
  }
  for (const auto& s : t.spans) {
    auto [name, args] = Describe(t, s);
    events.push_back(Slice(name, s.kind.c_str(), s.rank, origin[s.step] + s.start_seconds,
                           origin[s.step] + s.end_seconds, std::move(args)));
  }
  for (const auto& p : t.pipeline) {
    Json args = {{"step", p.step},
                 {"micro_batch", p.micro_batch},
                 {"compute_seconds", p.compute_seconds},
                 {"idle_seconds", p.idle_seconds}};
    events.push_back(Slice(p.phase + " " + std::to_string(p.micro_batch), p.phase.c_str(), p.rank,
                           origin[p.step] + p.start_seconds, origin[p.step] + p.end_seconds,
                           std::move(args)));
  }
  Json trace;
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ms";
  trace["otherData"] = {{"run", t.run.name},
                        {"devices", t.run.devices},
                        {"steps", static_cast<int64_t>(step_length.size())}};
  return trace;
}

int RunTrace(const TraceOptions& o) {
  auto reader = store::RunReader::Open(o.run);
  if (!reader.ok()) return FailStore(reader.status());
  auto tables = ReadTables(**reader, o.rank);
  if (!tables.ok()) return FailStore(tables.status());
  if (tables->spans.empty() && tables->pipeline.empty()) {
    return Fail(kExitBadInput,
                o.run + ": no timing recorded" + (o.rank >= 0 ? " for that rank" : "") +
                    " (train records it at steps 1, 2 and every --timing-every N-th; plan runs "
                    "and runs recorded with --timing-every 0 have none)");
  }
  const Json trace = BuildTrace(*tables);
  std::ofstream out(o.out);
  out << trace.dump(1, ' ', false, Json::error_handler_t::replace) << "\n";
  out.close();
  if (!out) return Fail(kExitRunFailure, "cannot write " + o.out);
  size_t slices = 0, tracks = 0;
  for (const Json& e : trace["traceEvents"]) {
    slices += e["ph"] == "X";
    tracks += e["name"] == "thread_name";
  }
  std::printf("wrote %s: %zu slices on %zu track(s); open it in https://ui.perfetto.dev\n",
              o.out.c_str(), slices, tracks);
  return kExitOk;
}

}  // namespace

void AddTraceCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TraceOptions>();
  CLI::App* app = root.add_subcommand(
      "trace",
      "Write a run's measured timeline as a Chrome/Perfetto trace (trace-event JSON): one\n"
      "track per rank (SPMD) or worker (placed). SPMD runs: every instruction of each timed\n"
      "step (train --timing-every) as a slice: compute named by its operator, each\n"
      "redistribution with its collectives nested inside. Placed runs: the pipeline's\n"
      "forward and backward phases per micro-batch. Timed steps are drawn one after another.\n"
      "\n"
      "Example: shardscope trace runs/ffn.db --out ffn-trace.json\n"
      "then open ffn-trace.json in https://ui.perfetto.dev (or chrome://tracing).\n"
      "Exit codes: 0 ok; 2 not a run file, or no timing recorded; 1 cannot write.");
  app->add_option("run", o->run, "Run file (runs/*.db)")->required();
  app->add_option("--out,-o", o->out, "Trace file to write (JSON)")->required();
  app->add_option("--rank", o->rank, "Only this rank's (or worker's) track")
      ->check(CLI::NonNegativeNumber);
  commands.push_back({app, [o] { return RunTrace(*o); }});
}

}  // namespace shardscope::cli

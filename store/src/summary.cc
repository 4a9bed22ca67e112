#include "shardscope/store/summary.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardscope/base/format.h"
#include "shardscope/store/display_text.h"
#include "shardscope/store/figures.h"

namespace shardscope::store {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxCellBytes = 200;   // a table cell (a name, a layout)
constexpr size_t kMaxFieldBytes = 600;  // a header line (the command line, the config)

// Everything a summary shows, read once.
struct Data {
  std::string path;
  int schema_version = 0;
  bool migrated = false;
  bool live = false;
  RunInfo run;
  RunCounts counts;
  std::vector<MeshRecord> meshes;
  std::vector<OperatorRecord> operators;
  std::vector<TensorRecord> tensors;
  std::vector<RedistributionRecord> redistributions;
  std::vector<StepRecord> steps;
  std::vector<EvaluationRecord> evaluations;
  std::vector<RankTotalsRecord> ranks;
  std::vector<EventRecord> events;  // the newest max_events, oldest first
};

template <typename T>
Status Take(Result<T> result, T* out) {
  if (!result.ok()) return result.status();
  *out = std::move(result).value();
  return Status::Ok();
}

Result<Data> Load(const RunReader& reader, const SummaryOptions& options) {
  Data d;
  d.path = reader.path();
  d.schema_version = reader.schema_version();
  d.migrated = reader.migrated();
  d.live = reader.IsLive();
  Status st = Take(reader.Run(), &d.run);
  if (st.ok()) st = Take(reader.Counts(), &d.counts);
  if (st.ok()) st = Take(reader.Meshes(), &d.meshes);
  if (st.ok()) st = Take(reader.Operators(), &d.operators);
  if (st.ok()) st = Take(reader.Tensors(), &d.tensors);
  // The summary names no per-rank figure of a redistribution: leave those rows in the file.
  if (st.ok()) st = Take(reader.Redistributions(true, /*per_rank=*/false), &d.redistributions);
  if (st.ok()) {
    st = Take(reader.Steps(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                           /*with_ranks=*/true),
              &d.steps);
  }
  if (st.ok()) st = Take(reader.Evaluations(), &d.evaluations);
  if (st.ok()) st = Take(reader.RankTotals(), &d.ranks);
  if (st.ok() && options.max_events != 0) {
    // The newest max_events: events are few; read them all and keep the tail.
    st = Take(reader.Events(), &d.events);
    if (st.ok() && options.max_events > 0 &&
        static_cast<int64_t>(d.events.size()) > options.max_events) {
      d.events.erase(d.events.begin(), d.events.end() - options.max_events);
    }
  }
  if (!st.ok()) return st;
  return d;
}

// ---------------------------------------------------------------------------------------
// Formatting.

std::string Printf(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

std::string Number(double v, const char* format = "%.6g") {
  return std::isnan(v) ? std::string("-") : Printf(format, v);
}

std::string Ratio(int64_t bytes, int64_t bound) {
  if (bound <= 0) return bytes <= 0 ? "-" : "inf";
  return Printf("%.2fx", static_cast<double>(bytes) / static_cast<double>(bound));
}

std::string Utc(double unix_time) {
  if (!(unix_time > 0) || unix_time > 253402300799.0) return "-";  // before 1970 or after 9999
  const auto t = static_cast<time_t>(unix_time);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "-";
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// A mesh's rank list: consecutive ranks (a pipeline stage's) as "[256-511]", else listed.
std::string RankList(const std::vector<int64_t>& ranks);

std::string Ints(const std::vector<int64_t>& v, const char* open = "(", const char* close = ")",
                 const char* sep = ",") {
  std::string s = open;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += sep;
    s += std::to_string(v[i]);
  }
  return s + close;
}

std::string Joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += sep;
    s += v[i];
  }
  return s;
}

// One line: newlines and tabs become spaces, long text is cut.
std::string OneLine(std::string_view text, size_t max = 160) {
  std::string s;
  for (char c : text) {
    if (s.size() >= max) {
      s += "...";
      break;
    }
    s.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  }
  return s;
}

std::string RankList(const std::vector<int64_t>& ranks) {
  bool consecutive = ranks.size() >= 3;
  for (size_t i = 1; i < ranks.size() && consecutive; ++i)
    consecutive = ranks[i] == ranks[i - 1] + 1;
  if (consecutive)
    return "[" + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back()) + "]";
  return OneLine(Ints(ranks, "[", "]"), 80);
}

// Columns separated by two spaces; `right` columns are right-aligned (numbers).
class Table {
 public:
  Table(std::vector<std::string> headers, std::vector<bool> right)
      : headers_(std::move(headers)), right_(std::move(right)) {
    right_.resize(headers_.size(), false);
  }
  // Cells come from the run file: escaped and cut, so that no name can drive the terminal.
  void Add(std::vector<std::string> row) {
    row.resize(headers_.size());
    for (std::string& cell : row) cell = EscapeControls(cell, {.max_bytes = kMaxCellBytes});
    rows_.push_back(std::move(row));
  }
  std::string Render(const std::string& indent = "  ") const {
    std::vector<size_t> width(headers_.size(), 0);
    for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
    for (const auto& row : rows_) {
      for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    std::string out;
    const auto line = [&](const std::vector<std::string>& cells) {
      std::string l = indent;
      for (size_t c = 0; c < cells.size(); ++c) {
        const size_t pad = width[c] - cells[c].size();
        const bool last = c + 1 == cells.size();
        if (right_[c]) l.append(pad, ' ');
        l += cells[c];
        if (!right_[c] && !last) l.append(pad, ' ');
        if (!last) l += "  ";
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    };
    line(headers_);
    for (const auto& row : rows_) line(row);
    return out;
  }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// Names of operators and tensors by id (for redistributions).
std::map<int64_t, std::string> OperatorNames(const Data& d) {
  std::map<int64_t, std::string> names;
  for (const auto& o : d.operators) names[o.id] = o.name;
  return names;
}
std::map<int64_t, std::string> TensorNames(const Data& d) {
  std::map<int64_t, std::string> names;
  for (const auto& t : d.tensors) names[t.id] = t.name;
  return names;
}
std::string NameOf(const std::map<int64_t, std::string>& names, int64_t id) {
  if (id < 0) return "-";
  const auto it = names.find(id);
  return it != names.end() ? it->second : "#" + std::to_string(id);
}

struct RedistTotals {
  int64_t bytes = 0, lower_bound = 0, bytes_total = 0, lower_bound_total = 0;
  double seconds = 0;
  int64_t above_bound = 0;
};
RedistTotals TotalsOf(const std::vector<RedistributionRecord>& redistributions) {
  RedistTotals t;
  for (const auto& r : redistributions) {
    const auto add = AddSaturating;
    add(t.bytes, r.bytes);
    add(t.lower_bound, r.lower_bound_bytes);
    add(t.bytes_total, r.bytes_total);
    add(t.lower_bound_total, r.lower_bound_total);
    if (!std::isnan(r.predicted_seconds)) t.seconds += r.predicted_seconds;
    if (r.bytes > r.lower_bound_bytes) ++t.above_bound;
  }
  return t;
}

// Indices of at most `max` rows out of n: evenly spaced, first and last included.
std::vector<size_t> Sample(size_t n, int64_t max) {
  std::vector<size_t> picks;
  if (max < 0 || static_cast<int64_t>(n) <= max) {
    for (size_t i = 0; i < n; ++i) picks.push_back(i);
    return picks;
  }
  if (max == 0) return picks;
  if (max == 1) return {n - 1};
  for (int64_t k = 0; k < max; ++k) {
    const size_t i = static_cast<size_t>((static_cast<double>(k) * static_cast<double>(n - 1)) /
                                         static_cast<double>(max - 1));
    if (picks.empty() || picks.back() != i) picks.push_back(i);
  }
  return picks;
}

std::string StatusLine(const Data& d) {
  std::string s = RunStatusName(d.run.status);
  if (d.run.status != d.run.stored_status) {
    s += std::string(" (recorded as ") + RunStatusName(d.run.stored_status) + ")";
  }
  if (d.live) s += ", being recorded now";
  if (!d.run.status_message.empty()) s += ": " + OneLine(d.run.status_message);
  return s;
}

int64_t CountLines(const std::string& text) {
  if (text.empty()) return 0;
  int64_t n = std::count(text.begin(), text.end(), '\n');
  return text.back() == '\n' ? n : n + 1;
}

// The config as JSON when it is (shallow enough to print safely), else as a string.
Json EmbedJson(const std::string& text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  if (max_depth <= 64) {
    Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) return parsed;
  }
  return Json(text);
}

// ---------------------------------------------------------------------------------------

std::string RenderText(const Data& d, const SummaryOptions& options) {
  const RunInfo& r = d.run;
  std::string out;
  const auto field = [&](const std::string& name, const std::string& value) {
    std::string label = name;
    label.resize(std::max<size_t>(label.size() + 1, 12), ' ');
    out += label + EscapeControls(value, {.max_bytes = kMaxFieldBytes}) + "\n";
  };
  field("Run file",
        d.path + " (schema version " + std::to_string(d.schema_version) +
            (d.migrated ? ", read through an upgrade to " + std::to_string(kSchemaVersion)
                        : std::string()) +
            ")");
  std::string what = r.name.empty() ? std::string("(unnamed)") : r.name;
  if (!r.mode.empty()) what += ": " + r.mode;
  if (!r.search.empty()) what += ", search " + r.search;
  what += ", " + std::to_string(r.devices) + (r.devices == 1 ? " device" : " devices");
  if (!r.backend.empty()) what += " (" + r.backend + ")";
  field("Run", what);
  field("Status", StatusLine(d));
  std::string times = "started " + Utc(r.started_at);
  if (r.ended_at > 0) {
    times += ", ended " + Utc(r.ended_at) + " (" + FormatSeconds(r.ended_at - r.started_at) + ")";
  } else if (r.updated_at > 0) {
    times += ", last commit " + Utc(r.updated_at);
  }
  field("Times", times);
  field("Writer", "pid " + std::to_string(r.writer_pid) + " on " +
                      (r.writer_host.empty() ? std::string("?") : r.writer_host));
  if (!r.model_path.empty() || !r.model_text.empty()) {
    field("Model", (r.model_path.empty() ? std::string("(inline)") : r.model_path) + " (" +
                       std::to_string(CountLines(r.model_text)) + " lines recorded)");
  }
  std::string versions =
      "shardscope " + (r.shardscope_version.empty() ? "?" : r.shardscope_version);
  if (!r.versions_json.empty() && r.versions_json != "{}") {
    versions += "; " + OneLine(r.versions_json);
  }
  field("Versions", versions);
  if (!r.command_line.empty()) field("Command", OneLine(r.command_line, 400));
  if (!r.config_json.empty() && r.config_json != "{}") field("Config", OneLine(r.config_json, 400));
  const RunCounts& c = d.counts;
  field("Contents", std::to_string(c.operators) + " operators (" +
                        std::to_string(c.backward_operators) + " backward), " +
                        std::to_string(c.tensors) + " tensors, " + std::to_string(c.edges) +
                        " edges, " + std::to_string(c.redistributions) + " redistributions, " +
                        std::to_string(c.programs) + " programs, " + std::to_string(c.steps) +
                        " steps, " + std::to_string(c.evaluations) + " evaluations, " +
                        std::to_string(c.events) + " events");

  if (!d.meshes.empty()) {
    out += "\nMeshes\n";
    Table t({"id", "name", "shape", "axes", "ranks"}, {true});
    for (const auto& m : d.meshes) {
      t.Add({std::to_string(m.id), m.name, Ints(m.shape), Joined(m.axis_names, ","),
             m.ranks.empty() ? std::string("row-major") : RankList(m.ranks)});
    }
    out += t.Render();
  }

  if (!d.operators.empty()) {
    out += "\nOperators (strategy, why, cost; runners-up with their costs)\n";
    Table t({"id", "name", "kind", "strategy", "provenance", "cost", "runners-up"},
            {true, false, false, false, false, true});
    const auto names = OperatorNames(d);
    const auto picks =
        Sample(d.operators.size(), options.max_operators < 0 ? -1 : options.max_operators);
    for (size_t i : picks) {
      const OperatorRecord& o = d.operators[i];
      std::string why = o.provenance;
      if (o.provenance_op >= 0) why += " from " + NameOf(names, o.provenance_op);
      if (o.search_round >= 0) why += " (round " + std::to_string(o.search_round) + ")";
      std::string others;
      int shown = 0;
      for (const auto& cand : o.candidates) {
        if (cand.strategy == o.strategy) continue;
        if (shown == options.max_candidates) {
          others += ", ...";
          break;
        }
        others += (shown++ > 0 ? ", " : "") + cand.strategy + " " + FormatSeconds(cand.cost) +
                  " (" +
                  (cand.has_breakdown() ? "compute " + FormatSeconds(cand.compute_seconds) : "—") +
                  ", " + (cand.memory_bytes >= 0 ? FormatBytes(cand.memory_bytes) : "—") + ")";
      }
      t.Add({std::to_string(o.id), o.name, o.kind, o.strategy.empty() ? "-" : o.strategy,
             OneLine(why, 80), FormatSeconds(o.cost), OneLine(others, 200)});
    }
    out += t.Render();
    if (picks.size() < d.operators.size()) {
      out += "  (" + std::to_string(picks.size()) + " of " + std::to_string(d.operators.size()) +
             " operators shown)\n";
    }
  }

  if (!d.redistributions.empty()) {
    const RedistTotals tot = TotalsOf(d.redistributions);
    out += "\nRedistributions: " + std::to_string(d.redistributions.size()) + ", " +
           FormatBytes(tot.bytes) + " per rank (max) against a lower bound of " +
           FormatBytes(tot.lower_bound) + " (" + Ratio(tot.bytes, tot.lower_bound) + "), " +
           std::to_string(tot.above_bound) + " above their bound, predicted " +
           FormatSeconds(tot.seconds) + "\n";
    Table t({"id", "tensor", "consumer", "from", "to", "bytes", "lower bound", "ratio", "time",
             "steps", "reason"},
            {true, false, false, false, false, true, true, true, true});
    const auto ops = OperatorNames(d);
    const auto tensors = TensorNames(d);
    const auto picks = Sample(d.redistributions.size(), options.max_redistributions);
    for (size_t i : picks) {
      const RedistributionRecord& x = d.redistributions[i];
      std::vector<std::string> kinds;
      for (const auto& s : x.steps) kinds.push_back(s.kind);
      t.Add({std::to_string(x.id), NameOf(tensors, x.tensor_id), NameOf(ops, x.consumer_op),
             x.from_layout, x.to_layout, FormatBytes(x.bytes), FormatBytes(x.lower_bound_bytes),
             Ratio(x.bytes, x.lower_bound_bytes), FormatSeconds(x.predicted_seconds),
             OneLine(kinds.empty() ? std::string("-") : Joined(kinds, ", "), 80),
             OneLine(x.reason, 100)});
    }
    out += t.Render();
    if (picks.size() < d.redistributions.size()) {
      out += "  (" + std::to_string(picks.size()) + " of " +
             std::to_string(d.redistributions.size()) + " redistributions shown)\n";
    }
  }

  if (!d.steps.empty()) {
    out += "\nLoss (" + std::to_string(d.steps.size()) + " steps)\n";
    // docs/run-format.md, "Figures": the slowest rank's wall time; the others max over ranks.
    Table t({"step", "epoch", "loss", "step time", "compute", "communication", "received"},
            {true, true, true, true, true, true, true});
    for (size_t i : Sample(d.steps.size(), options.max_steps)) {
      const StepRecord& s = d.steps[i];
      const StepFigures f = FiguresOf(s);
      t.Add({std::to_string(s.step), std::to_string(s.epoch), Number(s.loss),
             FormatSeconds(f.seconds), FormatSeconds(f.compute_seconds),
             FormatSeconds(f.comm_seconds), FormatBytes(f.bytes_recv)});
    }
    out += t.Render();
  }

  if (!d.evaluations.empty()) {
    out += "\nEvaluations\n";
    Table t({"step", "epoch", "name", "loss", "accuracy", "samples", "time"},
            {true, true, false, true, true, true, true});
    for (const auto& e : d.evaluations) {
      t.Add({std::to_string(e.step), std::to_string(e.epoch), e.name, Number(e.loss),
             Number(e.accuracy, "%.4f"), std::to_string(e.samples), FormatSeconds(e.seconds)});
    }
    out += t.Render();
  }

  if (!d.ranks.empty()) {
    out += "\nPer rank (sums over the steps; memory: the largest step)\n";
    Table t({"rank", "steps", "compute", "communication", "sent", "received", "params", "grads",
             "optimizer", "activations", "peak"},
            {true, true, true, true, true, true, true, true, true, true, true});
    for (const auto& k : d.ranks) {
      t.Add({std::to_string(k.rank), std::to_string(k.steps), FormatSeconds(k.compute_seconds),
             FormatSeconds(k.comm_seconds), FormatBytes(k.bytes_sent), FormatBytes(k.bytes_recv),
             FormatBytes(k.param_bytes), FormatBytes(k.grad_bytes), FormatBytes(k.optimizer_bytes),
             FormatBytes(k.activation_bytes), FormatBytes(k.peak_bytes)});
    }
    out += t.Render();
  }

  if (!d.events.empty()) {
    out += "\nEvents";
    if (static_cast<int64_t>(d.events.size()) < d.counts.events) {
      out += " (last " + std::to_string(d.events.size()) + " of " +
             std::to_string(d.counts.events) + ")";
    }
    out += "\n";
    Table t({"time", "level", "step", "source", "text"}, {false, false, true});
    for (const auto& e : d.events) {
      t.Add({Utc(e.time), e.level, e.step >= 0 ? std::to_string(e.step) : "-", e.source,
             OneLine(e.text, 200)});
    }
    out += t.Render();
  }
  return out;
}

Json ToJson(const Data& d) {
  const RunInfo& r = d.run;
  Json j;
  j["file"] = d.path;
  j["schema_version"] = d.schema_version;
  j["migrated"] = d.migrated;
  j["live"] = d.live;
  j["run"] = {{"name", r.name},
              {"mode", r.mode},
              {"search", r.search},
              {"devices", r.devices},
              {"backend", r.backend},
              {"status", RunStatusName(r.status)},
              {"recorded_status", RunStatusName(r.stored_status)},
              {"status_message", r.status_message},
              {"started_at", r.started_at},
              {"updated_at", r.updated_at},
              {"ended_at", r.ended_at > 0 ? Json(r.ended_at) : Json(nullptr)},
              {"writer_pid", r.writer_pid},
              {"writer_host", r.writer_host},
              {"model_path", r.model_path},
              {"model_text", r.model_text},
              {"command_line", r.command_line},
              {"shardscope_version", r.shardscope_version},
              {"versions", EmbedJson(r.versions_json)},
              {"config", EmbedJson(r.config_json)}};
  const RunCounts& c = d.counts;
  j["counts"] = {{"meshes", c.meshes},
                 {"operators", c.operators},
                 {"backward_operators", c.backward_operators},
                 {"candidates", c.candidates},
                 {"tensors", c.tensors},
                 {"edges", c.edges},
                 {"redistributions", c.redistributions},
                 {"redist_steps", c.redist_steps},
                 {"programs", c.programs},
                 {"instructions", c.instructions},
                 {"send_recvs", c.send_recvs},
                 {"steps", c.steps},
                 {"rank_steps", c.rank_steps},
                 {"evaluations", c.evaluations},
                 {"events", c.events}};
  Json meshes = Json::array();
  for (const auto& m : d.meshes) {
    meshes.push_back({{"id", m.id},
                      {"name", m.name},
                      {"shape", m.shape},
                      {"axis_names", m.axis_names},
                      {"ranks", m.ranks}});
  }
  j["meshes"] = std::move(meshes);
  Json ops = Json::array();
  for (const auto& o : d.operators) {
    Json cands = Json::array();
    for (const auto& cand : o.candidates) {
      cands.push_back(
          {{"strategy", cand.strategy},
           {"cost", cand.cost},
           {"compute_seconds", cand.compute_seconds},  // NaN: null
           {"comm_seconds", cand.comm_seconds},
           {"memory_bytes", cand.memory_bytes >= 0 ? Json(cand.memory_bytes) : Json(nullptr)},
           {"note", cand.note}});
    }
    const auto ref = [](int64_t id) { return id >= 0 ? Json(id) : Json(nullptr); };
    ops.push_back({{"id", o.id},
                   {"name", o.name},
                   {"scope", o.scope},
                   {"kind", o.kind},
                   {"is_backward", o.is_backward},
                   {"forward_id", ref(o.forward_id)},
                   {"mesh_id", ref(o.mesh_id)},
                   {"strategy", o.strategy},
                   {"provenance", o.provenance},
                   {"provenance_detail", o.provenance_detail},
                   {"provenance_op", ref(o.provenance_op)},
                   {"search_round", ref(o.search_round)},
                   {"cost", o.cost},
                   {"worker", ref(o.worker)},
                   {"candidates", std::move(cands)}});
  }
  j["operators"] = std::move(ops);
  const RedistTotals tot = TotalsOf(d.redistributions);
  const auto ratio = [](int64_t bytes, int64_t bound) {
    return bound > 0 ? Json(static_cast<double>(bytes) / static_cast<double>(bound))
                     : Json(nullptr);
  };
  j["redistribution_totals"] = {
      {"count", d.redistributions.size()},    {"bytes", tot.bytes},
      {"lower_bound_bytes", tot.lower_bound}, {"ratio", ratio(tot.bytes, tot.lower_bound)},
      {"bytes_total", tot.bytes_total},       {"lower_bound_total", tot.lower_bound_total},
      {"above_bound", tot.above_bound},       {"predicted_seconds", tot.seconds}};
  const auto op_names = OperatorNames(d);
  const auto tensor_names = TensorNames(d);
  Json redists = Json::array();
  for (const auto& x : d.redistributions) {
    Json steps = Json::array();
    for (const auto& s : x.steps) {
      steps.push_back({{"ordinal", s.ordinal},
                       {"kind", s.kind},
                       {"axes", s.axes},
                       {"axis_names", s.axis_names},
                       {"dim", s.dim},
                       {"dim_to", s.dim_to},
                       {"groups", s.groups.Expand()},
                       {"bytes_sent_max", s.bytes_sent_max},
                       {"bytes_recv_max", s.bytes_recv_max},
                       {"messages", s.messages},
                       {"seconds", s.seconds},
                       {"layout_after", s.layout_after},
                       {"reason", s.reason}});
    }
    redists.push_back({{"id", x.id},
                       {"tensor_id", x.tensor_id >= 0 ? Json(x.tensor_id) : Json(nullptr)},
                       {"tensor", NameOf(tensor_names, x.tensor_id)},
                       {"consumer_op", x.consumer_op >= 0 ? Json(x.consumer_op) : Json(nullptr)},
                       {"consumer", NameOf(op_names, x.consumer_op)},
                       {"is_backward", x.is_backward},
                       {"from", x.from_layout},
                       {"to", x.to_layout},
                       {"reason", x.reason},
                       {"bytes", x.bytes},
                       {"lower_bound_bytes", x.lower_bound_bytes},
                       {"ratio", ratio(x.bytes, x.lower_bound_bytes)},
                       {"bytes_total", x.bytes_total},
                       {"lower_bound_total", x.lower_bound_total},
                       {"byte_optimal", x.byte_optimal},
                       {"predicted_seconds", x.predicted_seconds},
                       {"steps", std::move(steps)}});
  }
  j["redistributions"] = std::move(redists);
  Json steps = Json::array();
  for (const auto& s : d.steps) {
    const StepFigures f = FiguresOf(s);
    steps.push_back({{"step", s.step},
                     {"epoch", s.epoch},
                     {"loss", s.loss},
                     {"seconds", f.seconds},
                     {"compute_seconds", f.compute_seconds},
                     {"comm_seconds", f.comm_seconds},
                     {"bytes_recv", f.bytes_recv}});
  }
  j["steps"] = std::move(steps);
  Json evals = Json::array();
  for (const auto& e : d.evaluations) {
    evals.push_back({{"step", e.step},
                     {"epoch", e.epoch},
                     {"name", e.name},
                     {"loss", e.loss},
                     {"accuracy", e.accuracy},
                     {"samples", e.samples},
                     {"seconds", e.seconds}});
  }
  j["evaluations"] = std::move(evals);
  Json ranks = Json::array();
  for (const auto& k : d.ranks) {
    ranks.push_back({{"rank", k.rank},
                     {"steps", k.steps},
                     {"compute_seconds", k.compute_seconds},
                     {"comm_seconds", k.comm_seconds},
                     {"bytes_sent", k.bytes_sent},
                     {"bytes_recv", k.bytes_recv},
                     {"param_bytes", k.param_bytes},
                     {"grad_bytes", k.grad_bytes},
                     {"optimizer_bytes", k.optimizer_bytes},
                     {"activation_bytes", k.activation_bytes},
                     {"peak_bytes", k.peak_bytes}});
  }
  j["ranks"] = std::move(ranks);
  Json events = Json::array();
  for (const auto& e : d.events) {
    events.push_back({{"id", e.id},
                      {"time", e.time},
                      {"level", e.level},
                      {"step", e.step >= 0 ? Json(e.step) : Json(nullptr)},
                      {"rank", e.rank >= 0 ? Json(e.rank) : Json(nullptr)},
                      {"source", e.source},
                      {"text", e.text}});
  }
  j["events"] = std::move(events);
  return j;
}

}  // namespace

Result<std::string> FormatRunSummary(const RunReader& reader, const SummaryOptions& options) {
  Result<Data> data = Load(reader, options);
  if (!data.ok()) return data.status();
  return RenderText(*data, options);
}

Result<std::string> RunSummaryJson(const RunReader& reader, const SummaryOptions& options) {
  Result<Data> data = Load(reader, options);
  if (!data.ok()) return data.status();
  try {
    // Text from a damaged file may not be UTF-8: replace, never throw.
    return ToJson(*data).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, reader.path() + ": formatting JSON: " + e.what());
  }
}

}  // namespace shardscope::store

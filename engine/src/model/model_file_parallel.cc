// The parallel section: meshes, strategies (seed notation, syntax checked lightly), place
// and shard blocks, and resolving them against the built graph.
#include <algorithm>
#include <cctype>
#include <climits>
#include <functional>

#include "model_file_internal.h"
#include "shardscope/layout/layout.h"

namespace shardscope::model_file {

namespace {

const char* kStrategyForms =
    "a strategy is a tuple with one entry per input, each a tuple of part counts such as "
    "((2, 4), (4, 1)), or a layout call on a declared mesh such as "
    "(layout(\"mp\", (\"sp\", \"dp\")), layout((\"sp\", \"dp\"), \"None\"))";

// Splits "<what> '<text>', column <c>: <rest>" (the layout parsers' messages) into c and rest.
bool SplitColumn(const std::string& message, int* column, std::string* rest) {
  const std::string marker = "', column ";
  const size_t p = message.find(marker);
  if (p == std::string::npos) return false;
  size_t i = p + marker.size();
  int c = 0;
  bool digits = false;
  while (i < message.size() && std::isdigit(static_cast<unsigned char>(message[i]))) {
    c = c * 10 + (message[i++] - '0');
    digits = true;
  }
  if (!digits || message.compare(i, 2, ": ") != 0) return false;
  *column = c;
  *rest = message.substr(i + 2);
  return true;
}

std::vector<std::string> MeshNames(const MeshTable& meshes) {
  std::vector<std::string> names;
  for (const auto& [name, mesh] : meshes) names.push_back(name);
  return names;
}

// A recursive-descent checker of the seed notation; every error is located in the file.
class StrategyParser {
 public:
  StrategyParser(const std::string& text, std::function<SourceLocation(size_t)> at,
                 std::string what, const MeshTable& meshes, bool allow_none)
      : t_(text),
        at_(std::move(at)),
        what_(std::move(what)),
        meshes_(meshes),
        allow_none_(allow_none) {}

  std::vector<StrategyItem> Parse() {
    SkipSpace();
    if (i_ == t_.size()) Fail(0, "is empty; " + std::string(kStrategyForms));
    if (!IsOpen(t_[i_])) {
      Fail(i_, "must start with '(': " + std::string(kStrategyForms) + "; found '" +
                   t_.substr(i_, 1) + "'");
    }
    std::vector<StrategyItem> items;
    const size_t open = i_;
    const char close = Closer(t_[i_++]);
    while (true) {
      SkipSpace();
      if (i_ == t_.size()) Unclosed(open);
      if (t_[i_] == close) {
        ++i_;
        break;
      }
      items.push_back(Item(items.size() + 1));
      SkipSpace();
      if (i_ == t_.size()) Unclosed(open);
      if (t_[i_] == ',') {
        ++i_;
      } else if (t_[i_] != close) {
        Fail(i_, "expected ',' or '" + std::string(1, close) + "' after entry " +
                     std::to_string(items.size()) + ", found '" + t_.substr(i_, 1) + "'");
      }
    }
    SkipSpace();
    if (i_ != t_.size()) {
      Fail(i_, "unexpected '" + t_.substr(i_, 1) + "' after the closing '" + std::string(1, close) +
                   "'");
    }
    return items;
  }

 private:
  static bool IsOpen(char c) { return c == '(' || c == '['; }
  static char Closer(char c) { return c == '(' ? ')' : ']'; }
  void SkipSpace() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  [[noreturn]] void Fail(size_t offset, const std::string& message) const {
    FailAt(at_(offset), what_ + " " + message);
  }
  [[noreturn]] void Unclosed(size_t open) const {
    Fail(open, "has an unclosed '" + t_.substr(open, 1) + "' (expected '" +
                   std::string(1, Closer(t_[open])) + "')");
  }

  StrategyItem Item(size_t index) {
    StrategyItem item;
    item.location = at_(i_);
    const char c = t_[i_];
    if (IsOpen(c)) {
      item.kind = StrategyItem::kTuple;
      const size_t open = i_;
      const char close = Closer(t_[i_++]);
      while (true) {
        SkipSpace();
        if (i_ == t_.size()) Unclosed(open);
        if (t_[i_] == close) {
          ++i_;
          break;
        }
        if (!std::isdigit(static_cast<unsigned char>(t_[i_])) && t_[i_] != '-') {
          Fail(i_, "entry " + std::to_string(index) + ": expected a part count (a positive " +
                       "integer) or '" + std::string(1, close) + "', found '" + t_.substr(i_, 1) +
                       "'");
        }
        const size_t start = i_;
        if (t_[i_] == '-') ++i_;
        int64_t v = 0;
        while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
          if (v > (int64_t{1} << 40)) Fail(start, "has a part count that is too large");
          v = v * 10 + (t_[i_++] - '0');
        }
        if (t_[start] == '-' || v < 1) {
          Fail(start, "entry " + std::to_string(index) +
                          ": a part count must be a positive integer, found '" +
                          t_.substr(start, i_ - start) + "'");
        }
        ++item.rank;
        SkipSpace();
        if (i_ == t_.size()) Unclosed(open);
        if (t_[i_] == ',') {
          ++i_;
        } else if (t_[i_] != close) {
          Fail(i_, "entry " + std::to_string(index) + ": expected ',' or '" +
                       std::string(1, close) + "', found '" + t_.substr(i_, 1) + "'");
        }
      }
      return item;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = i_;
      while (i_ < t_.size() &&
             (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '_' || t_[i_] == '.')) {
        ++i_;
      }
      const std::string ident = t_.substr(start, i_ - start);
      SkipSpace();
      if (ident == "None" && (i_ == t_.size() || t_[i_] != '(')) {
        if (!allow_none_) {
          Fail(start, "entry " + std::to_string(index) +
                          ": None (data-parallel) is only for shard blocks; an operator's "
                          "strategy gives the parts of every input dimension");
        }
        item.kind = StrategyItem::kNone;
        return item;
      }
      if (i_ == t_.size() || t_[i_] != '(') {
        Fail(start, "entry " + std::to_string(index) + ": expected a tuple such as (2, 4), " +
                        "None or a layout call such as " + "layout(\"mp\", \"None\"), found '" +
                        ident + "'");
      }
      // A layout call: find its closing parenthesis (strings may hold brackets).
      const size_t paren = i_;
      int depth = 0;
      char quote = 0;
      size_t end = std::string::npos;
      for (size_t j = paren; j < t_.size(); ++j) {
        const char d = t_[j];
        if (quote != 0) {
          if (d == quote) quote = 0;
        } else if (d == '"' || d == '\'') {
          quote = d;
        } else if (d == '(' || d == '[') {
          ++depth;
        } else if (d == ')' || d == ']') {
          if (--depth == 0) {
            end = j;
            break;
          }
        }
      }
      if (end == std::string::npos) {
        Fail(paren, "has an unclosed '(' in the call of '" + ident + "'");
      }
      const DeviceMesh* mesh = nullptr;
      for (const auto& [name, m] : meshes_) {
        if (name == ident) mesh = &m;
      }
      if (mesh == nullptr) {
        if (meshes_.empty()) {
          Fail(start, "calls '" + ident + "', but no mesh is declared: declare it in " +
                          "parallel.meshes, e.g. " + ident +
                          ": Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))");
        }
        Fail(start, "calls '" + ident + "', which is not a mesh declared in parallel.meshes" +
                        DidYouMean(ident, MeshNames(meshes_)) +
                        "; declared: " + Join(MeshNames(meshes_)));
      }
      const std::string call = t_.substr(start, end + 1 - start);
      Result<DimAxes> axes = ParseLayoutCall(call, *mesh);
      if (!axes.ok()) {
        int column = 0;
        std::string rest;
        if (SplitColumn(axes.status().message(), &column, &rest)) {
          Fail(start + static_cast<size_t>(column - 1),
               "entry " + std::to_string(index) + ": " + rest);
        }
        Fail(start, "entry " + std::to_string(index) + ": " + axes.status().message());
      }
      item.kind = StrategyItem::kLayout;
      item.mesh = ident;
      item.rank = static_cast<int>(axes->size());
      i_ = end + 1;
      return item;
    }
    Fail(i_, "entry " + std::to_string(index) + ": expected a tuple such as (2, 4), a " +
                 "layout call or None, found '" + t_.substr(i_, 1) + "'");
  }

  const std::string& t_;
  std::function<SourceLocation(size_t)> at_;
  std::string what_;
  const MeshTable& meshes_;
  bool allow_none_;
  size_t i_ = 0;
};

std::string Trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// [[2, 4], [4, 1]] -> "((2, 4), (4, 1))"; [[8, 1]] -> "((8, 1),)".
Strategy StrategyFromSequence(const Source& src, const YAML::Node& node, const std::string& what,
                              bool allow_none) {
  Strategy s;
  s.location = src.At(node);
  std::string text = "(";
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& entry = node[i];
    StrategyItem item;
    item.location = src.At(entry);
    if (i > 0) text += ", ";
    if (entry.IsNull() || (entry.IsScalar() && entry.Scalar() == "None")) {
      if (!allow_none) {
        src.Fail(entry, what + " entry " + std::to_string(i + 1) +
                            ": None (data-parallel) is only for shard blocks");
      }
      item.kind = StrategyItem::kNone;
      text += "None";
    } else if (entry.IsSequence()) {
      text += "(";
      for (size_t j = 0; j < entry.size(); ++j) {
        const int64_t parts = ReadPositive(
            src, entry[j], what + " entry " + std::to_string(i + 1) + ": a part count");
        text += (j ? ", " : "") + std::to_string(parts);
        ++item.rank;
      }
      text += entry.size() == 1 ? ",)" : ")";
    } else {
      src.Fail(entry, what + " entry " + std::to_string(i + 1) +
                          ": expected a list of part counts such as [2, 4]; " + kStrategyForms);
    }
    s.items.push_back(item);
  }
  text += node.size() == 1 ? ",)" : ")";
  s.text = text;
  return s;
}

}  // namespace

Strategy ReadStrategy(const Source& src, const YAML::Node& node, const std::string& what,
                      const MeshTable& meshes, bool allow_none) {
  if (node.IsSequence()) return StrategyFromSequence(src, node, what, allow_none);
  if (!node.IsScalar()) {
    src.Fail(node, what + " must be a strategy in seed notation such as ((2, 4), (4, 1)); " +
                       kStrategyForms);
  }
  const std::string& raw = node.Scalar();
  Strategy s;
  s.location = src.At(node);
  s.text = Trimmed(raw);
  StrategyParser parser(
      raw, [&](size_t offset) { return src.AtOffset(node, offset); }, what, meshes, allow_none);
  s.items = parser.Parse();
  return s;
}

WrittenStrategy ReadWrittenStrategy(const Source& src, const std::string& target,
                                    const YAML::Node& key, const YAML::Node& value,
                                    const MeshTable& meshes, const std::string& origin) {
  WrittenStrategy w;
  w.target = target;
  w.location = src.At(key);
  w.origin = origin;
  const std::string what = "the strategy of '" + target + "'";
  if (value.IsMap()) {
    Map m(src, value, what, {"in", "out"});
    w.in = ReadStrategy(src, m.Require("in"), what + " (in)", meshes, false);
    if (const Field* out = m.Find("out")) {
      w.out = ReadStrategy(src, out->value, what + " (out)", meshes, false);
    }
  } else {
    w.in = ReadStrategy(src, value, what, meshes, false);
  }
  return w;
}

void ParseParallel(const Source& src, const YAML::Node& node, ParallelDraft* draft) {
  Map p(src, node, "the parallel section",
        {"mode", "search", "devices", "meshes", "strategies", "place", "shard",
         "optimizer_sharding", "recompute", "pipeline"});
  ParallelConfig& config = draft->config;
  if (const Field* f = p.Find("pipeline")) {  // auto | N stages (checked against the devices later)
    config.pipeline = ReadString(src, f->value, "parallel.pipeline (auto, or a number of stages)");
    config.pipeline_location = src.At(f->value);
  }
  if (const Field* f = p.Find("mode")) {
    std::string mode = ReadString(src, f->value, "parallel.mode");
    std::string m;
    for (char c : mode) m += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (m == "standalone") m = "stand_alone";
    if (m == "semi_auto_parallel") m = "semi_auto";
    if (m == "auto_parallel") m = "auto";
    const std::vector<std::string> modes = {"stand_alone", "data_parallel", "semi_auto", "auto"};
    if (std::find(modes.begin(), modes.end(), m) == modes.end()) {
      src.Fail(f->value, "parallel.mode '" + mode + "' is not a mode" + DidYouMean(mode, modes) +
                             "; modes: " + Join(modes));
    }
    config.mode = m;
    draft->mode_given = true;
    draft->mode_location = src.At(f->value);
  }
  if (const Field* f = p.Find("search")) {
    const std::string search = ReadString(src, f->value, "parallel.search");
    const std::vector<std::string> searches = {"sharding_propagation", "recursive_programming",
                                               "dynamic_programming"};
    if (std::find(searches.begin(), searches.end(), search) == searches.end()) {
      src.Fail(f->value, "parallel.search '" + search + "' is not a search" +
                             DidYouMean(search, searches) + "; searches: " + Join(searches));
    }
    config.search = search;
    draft->search_location = src.At(f->value);
  }
  if (const Field* f = p.Find("devices")) {
    const int64_t devices = ReadPositive(src, f->value, "parallel.devices");
    if (devices > INT_MAX) src.Fail(f->value, "parallel.devices is too large");
    config.devices = static_cast<int>(devices);
    config.devices_location = src.At(f->value);
  }
  if (const Field* f = p.Find("optimizer_sharding")) {
    const int64_t stage = ReadNonNegative(src, f->value, "parallel.optimizer_sharding");
    if (stage > 3) {
      src.Fail(f->value, "parallel.optimizer_sharding " + std::to_string(stage) +
                             ": ZeRO stages are 0 (off), 1 (optimizer states), 2 (and "
                             "gradients) and 3 (and parameters)");
    }
    config.optimizer_sharding = static_cast<int>(stage);
  }
  if (const Field* f = p.Find("recompute")) {  // true (every layer) or a list of name scopes
    if (f->value.IsSequence()) {
      for (size_t i = 0; i < f->value.size(); ++i)
        config.recompute.push_back(ReadString(src, f->value[i], "a parallel.recompute scope"));
    } else if (ReadBool(src, f->value, "parallel.recompute (true, or a list of scopes)")) {
      config.recompute = {"*"};
    }
  }
  if (const Field* f = p.Find("meshes")) {
    Map meshes(src, f->value, "parallel.meshes", {});
    for (const Field& m : meshes.fields()) {
      if (!IsIdentifier(m.key)) {
        src.Fail(m.key_node, "mesh name '" + m.key +
                                 "' must be an identifier (letters, digits, '_'), as it is "
                                 "called in strategies: " +
                                 "layout(\"dp\", \"None\")");
      }
      const std::string expr = ReadString(src, m.value, "mesh '" + m.key + "'");
      Result<DeviceMesh> mesh = ParseMeshExpr(expr);
      if (!mesh.ok()) {
        int column = 0;
        std::string rest;
        if (SplitColumn(mesh.status().message(), &column, &rest)) {
          FailAt(src.AtOffset(m.value, static_cast<size_t>(column - 1)),
                 "mesh '" + m.key + "': " + rest);
        }
        src.Fail(m.value, "mesh '" + m.key + "': " + mesh.status().message());
      }
      if (config.devices > 0 && mesh->size() > config.devices) {
        src.Fail(m.value, "mesh '" + m.key + "' has " + std::to_string(mesh->size()) +
                              " devices but parallel.devices is " + std::to_string(config.devices));
      }
      config.meshes.emplace_back(m.key, Trimmed(expr));
      draft->meshes.emplace_back(m.key, *mesh);
    }
  }
  if (const Field* f = p.Find("strategies")) {
    Map strategies(src, f->value, "parallel.strategies", {});
    for (const Field& s : strategies.fields()) {
      draft->strategies.push_back(ReadWrittenStrategy(src, s.key, s.key_node, s.value,
                                                      draft->meshes, "parallel.strategies"));
    }
  }
  if (const Field* f = p.Find("place")) {
    Map place(src, f->value, "parallel.place", {});
    for (const Field& e : place.fields()) {
      const int64_t worker = ReadNonNegative(src, e.value, "the worker of '" + e.key + "'");
      if (config.devices > 0 && worker >= config.devices) {
        src.Fail(e.value, "worker " + std::to_string(worker) + " of '" + e.key +
                              "' is out of range: parallel.devices is " +
                              std::to_string(config.devices) + " (workers 0.." +
                              std::to_string(config.devices - 1) + ")");
      }
      if (worker > INT_MAX) src.Fail(e.value, "worker of '" + e.key + "' is too large");
      draft->places.push_back({e.key, static_cast<int>(worker), src.At(e.key_node)});
    }
  }
  if (const Field* f = p.Find("shard")) {
    if (!f->value.IsSequence()) {
      src.Fail(f->value,
               "parallel.shard must be a list of blocks, e.g. '- {block: block1, "
               "in_strategy: ...}' entries");
    }
    for (size_t i = 0; i < f->value.size(); ++i) {
      const YAML::Node& e = f->value[i];
      Map m(src, e, "parallel.shard entry " + std::to_string(i + 1),
            {"block", "in_strategy", "out_strategy", "level"});
      ShardBlockEntry entry;
      entry.block = ReadString(src, m.Require("block"), "the block of a shard entry");
      for (const ShardBlockEntry& earlier : config.shard_blocks) {
        // The model-file form of the seed's misuse: one block, two shard() results.
        if (earlier.block != entry.block) continue;
        src.Fail(m.Require("block"),
                 "shard block '" + entry.block + "' is sharded twice (first at " +
                     earlier.location.ToString() + "); shard a block once, with one in_strategy");
      }
      const std::string what = "the in_strategy of shard block '" + entry.block + "'";
      Strategy in = ReadStrategy(src, m.Require("in_strategy"), what, draft->meshes, true);
      Strategy out;
      if (const Field* o = m.Find("out_strategy")) {
        out = ReadStrategy(src, o->value, "the out_strategy of shard block '" + entry.block + "'",
                           draft->meshes, true);
      }
      if (const Field* l = m.Find("level")) {
        const int64_t level =
            ReadInt(src, l->value, "the level of shard block '" + entry.block + "'");
        if (level < 0 || level > 2) {
          src.Fail(l->value, "the level of shard block '" + entry.block +
                                 "' must be 0 (most computation per communication), 1 (least "
                                 "memory) or 2 (fastest), found " +
                                 std::to_string(level));
        }
        entry.level = static_cast<int>(level);
      }
      entry.in_strategy = in.text;
      entry.out_strategy = out.text;
      entry.location = src.At(m.Require("block"));
      config.shard_blocks.push_back(entry);
      draft->shard_strategies.emplace_back(std::move(in), std::move(out));
    }
  }
}

void FinishParallel(ParallelDraft* draft, const std::vector<WrittenStrategy>& inline_strategies) {
  ParallelConfig& config = draft->config;
  const bool has_strategies = !draft->strategies.empty() || !inline_strategies.empty();
  const bool has_shard = !config.shard_blocks.empty();
  if (!draft->mode_given) {
    if (!config.search.empty() || has_shard) {
      config.mode = "auto";
    } else if (has_strategies) {
      config.mode = "semi_auto";
    } else if (config.devices > 1 && draft->places.empty()) {
      config.mode = "data_parallel";
    } else {
      config.mode = "stand_alone";
    }
    return;
  }
  const std::string at = " (at " + draft->mode_location.ToString() + ")";
  if (!config.search.empty() && config.mode != "auto") {
    FailAt(draft->search_location,
           "parallel.search chooses the strategies of mode auto, but "
           "parallel.mode is " +
               config.mode + at);
  }
  if (has_strategies && config.mode != "semi_auto" && config.mode != "auto") {
    const WrittenStrategy& s =
        !inline_strategies.empty() &&
                (draft->strategies.empty() ||
                 inline_strategies.front().location.line < draft->strategies.front().location.line)
            ? inline_strategies.front()
            : draft->strategies.front();
    FailAt(s.location, "the strategy of '" + s.target +
                           "' needs parallel.mode semi_auto or auto, but the mode is " +
                           config.mode + at);
  }
  if (has_shard && config.mode != "auto") {
    FailAt(config.shard_blocks.front().location,
           "a shard block searches the strategies inside it and needs parallel.mode auto, but "
           "the mode is " +
               config.mode + at);
  }
}

namespace {

std::string Describe(const Graph& g, ValueId v) {
  return g.value(v).name + " " + ShapeToString(g.value(v).shape);
}

void CheckAgainst(const Strategy& s, const Graph& g, const Node& n, bool outputs,
                  const std::string& what) {
  if (s.empty()) return;
  const std::vector<ValueId>& values = outputs ? n.outputs : n.inputs;
  const std::string kind = outputs ? "output" : "input";
  if (s.items.size() != values.size()) {
    std::vector<std::string> names;
    for (ValueId v : values) names.push_back(Describe(g, v));
    FailAt(s.location, what + " has " + std::to_string(s.items.size()) + " entr" +
                           (s.items.size() == 1 ? "y" : "ies") + " but operator '" + n.name +
                           "' (" + OpName(n.op) + ") has " + std::to_string(values.size()) + " " +
                           kind + (values.size() == 1 ? "" : "s") + ": " + Join(names));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const StrategyItem& item = s.items[i];
    if (item.kind == StrategyItem::kNone) continue;
    const int rank = static_cast<int>(g.value(values[i]).shape.size());
    if (item.rank != rank) {
      FailAt(item.location, what + ": entry " + std::to_string(i + 1) + " describes " +
                                std::to_string(item.rank) + " dimension" +
                                (item.rank == 1 ? "" : "s") + " but " + kind + " " +
                                std::to_string(i + 1) + " of '" + n.name + "' (" +
                                Describe(g, values[i]) + ") has " + std::to_string(rank));
    }
  }
}

std::string ListNodes(const Graph& g, const std::vector<NodeId>& nodes, size_t max = 8) {
  std::vector<std::string> names;
  for (size_t i = 0; i < nodes.size() && i < max; ++i) names.push_back(g.node(nodes[i]).name);
  std::string out = Join(names);
  if (nodes.size() > max) out += ", ... (" + std::to_string(nodes.size()) + " in all)";
  return out;
}

[[noreturn]] void UnknownTarget(const SourceLocation& loc, const std::string& what,
                                const std::string& name, const Graph& g, const BuildTrace& trace) {
  std::vector<std::string> candidates;
  for (const auto& [path, rec] : trace.modules) candidates.push_back(path);
  std::vector<NodeId> all;
  for (const Node& n : g.nodes()) {
    candidates.push_back(n.name);
    all.push_back(n.id);
  }
  FailAt(loc, what + " names '" + name +
                  "', but the network has no operator or module of that "
                  "name" +
                  DidYouMean(name, candidates) + "; its operators: " + ListNodes(g, all, 12));
}

struct Slot {
  const WrittenStrategy* strategy = nullptr;
  int strategy_rank = 0;
  const WrittenPlace* place = nullptr;
  int place_rank = 0;
};

}  // namespace

std::vector<AnnotationEntry> ResolveAnnotations(const ModelGraph& model, const BuildTrace& trace,
                                                const ParallelDraft& draft) {
  const Graph& g = model.graph;
  std::vector<Slot> slots(g.num_nodes());
  std::vector<const WrittenStrategy*> strategies;
  for (const WrittenStrategy& ws : trace.inline_strategies) strategies.push_back(&ws);
  for (const WrittenStrategy& ws : draft.strategies) strategies.push_back(&ws);

  for (const WrittenStrategy* wsp : strategies) {
    const WrittenStrategy& ws = *wsp;
    const std::string what = "the strategy of '" + ws.target + "'";
    std::vector<NodeId> targets;
    int rank = 0;
    auto rec = trace.modules.find(ws.target);
    if (rec != trace.modules.end()) {
      const bool single = std::all_of(rec->second.ops_per_call.begin(),
                                      rec->second.ops_per_call.end(), [](int k) { return k == 1; });
      if (!single) {
        FailAt(ws.location, what + ": a strategy is set on one operator, but '" + ws.target +
                                "' is a " + rec->second.type + " module with the operators " +
                                ListNodes(g, rec->second.nodes) + "; name one of them (e.g. '" +
                                g.node(rec->second.nodes[0]).name +
                                "'), or use parallel.shard to fix the layouts at a block's "
                                "boundary");
      }
      targets = rec->second.nodes;
      rank = 1;
    } else if (NodeId n = g.FindNode(ws.target); n != kNoNode) {
      targets = {n};
      rank = 2;
    } else {
      UnknownTarget(ws.location, ws.origin, ws.target, g, trace);
    }
    for (NodeId n : targets) {
      CheckAgainst(ws.in, g, g.node(n), false, what);
      CheckAgainst(ws.out, g, g.node(n), true, what + " (out)");
      Slot& slot = slots[n];
      if (slot.strategy != nullptr && slot.strategy_rank == rank) {
        FailAt(ws.location, "operator '" + g.node(n).name + "' is given two strategies: here (" +
                                ws.origin + ") and at " + slot.strategy->location.ToString() +
                                " (" + slot.strategy->origin + ")");
      }
      if (slot.strategy == nullptr || rank > slot.strategy_rank) {
        slot.strategy = &ws;
        slot.strategy_rank = rank;
      }
    }
  }

  for (const WrittenPlace& wp : draft.places) {
    std::vector<NodeId> targets;
    int rank = 0;
    auto rec = trace.modules.find(wp.target);
    if (rec != trace.modules.end()) {
      targets = rec->second.nodes;
      rank = 1 + static_cast<int>(std::count(wp.target.begin(), wp.target.end(), '.'));
    } else if (NodeId n = g.FindNode(wp.target); n != kNoNode) {
      targets = {n};
      rank = INT_MAX;
    } else {
      UnknownTarget(wp.location, "parallel.place", wp.target, g, trace);
    }
    for (NodeId n : targets) {
      Slot& slot = slots[n];
      if (slot.place == nullptr || rank > slot.place_rank) {
        slot.place = &wp;
        slot.place_rank = rank;
      }
    }
  }

  for (size_t i = 0; i < draft.config.shard_blocks.size(); ++i) {
    const ShardBlockEntry& sb = draft.config.shard_blocks[i];
    const std::string what = "shard block '" + sb.block + "'";
    auto rec = trace.modules.find(sb.block);
    if (rec == trace.modules.end()) {
      if (g.FindNode(sb.block) != kNoNode) {
        FailAt(sb.location, what + ": '" + sb.block +
                                "' is an operator; shard wraps a block (a module). For one "
                                "operator use parallel.strategies");
      }
      UnknownTarget(sb.location, "parallel.shard", sb.block, g, trace);
    }
    const auto& [in, out] = draft.shard_strategies[i];
    const std::pair<const Strategy*, const Shape*> checks[] = {{&in, &rec->second.input_shape},
                                                               {&out, &rec->second.output_shape}};
    for (int k = 0; k < 2; ++k) {
      const Strategy& s = *checks[k].first;
      const std::string which = k == 0 ? "in_strategy" : "out_strategy";
      if (s.empty()) continue;
      if (s.items.size() != 1) {
        FailAt(s.location, "the " + which + " of " + what + " has " +
                               std::to_string(s.items.size()) + " entries but the block has one " +
                               (k == 0 ? "input" : "output") + " (" +
                               ShapeToString(*checks[k].second) + ")");
      }
      const StrategyItem& item = s.items[0];
      const int rank = static_cast<int>(checks[k].second->size());
      if (item.kind != StrategyItem::kNone && item.rank != rank) {
        FailAt(item.location,
               "the " + which + " of " + what + " describes " + std::to_string(item.rank) +
                   " dimensions but the block's " + (k == 0 ? "input " : "output ") +
                   ShapeToString(*checks[k].second) + " has " + std::to_string(rank));
      }
    }
  }

  std::vector<AnnotationEntry> entries;
  for (const Node& n : g.nodes()) {
    const Slot& slot = slots[n.id];
    if (slot.strategy == nullptr && slot.place == nullptr) continue;
    AnnotationEntry e;
    e.op = n.name;
    if (slot.strategy != nullptr) {
      e.annotations.in_strategy = slot.strategy->in.text;
      e.annotations.out_strategy = slot.strategy->out.text;
      e.location = slot.strategy->location;
    }
    if (slot.place != nullptr) {
      e.annotations.worker = slot.place->worker;
      e.place_location = slot.place->location;
      if (slot.strategy == nullptr) e.location = slot.place->location;
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace shardscope::model_file

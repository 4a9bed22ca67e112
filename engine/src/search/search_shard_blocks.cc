// Shard blocks (ShardBlockSpec): boundary layouts and levels narrow the candidates inside.
#include "search/search_graph.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace shardscope::search_internal {
namespace {

// "((1,8),)" / "(None,)" / "((8,1),(None))": per item split counts, or nullopt for None.
Result<std::vector<std::optional<std::vector<int64_t>>>> ParseBoundary(const std::string& text,
                                                                       const std::string& what) {
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  }
  std::vector<std::optional<std::vector<int64_t>>> items;
  const auto bad = [&] {
    return Status::Invalid(what + ": '" + text +
                           "' is not a tuple of split tuples or None, e.g. ((1,8),) or (None,)");
  };
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return bad();
  size_t i = 1;
  while (i + 1 < s.size()) {
    if (s.compare(i, 4, "None") == 0) {
      items.emplace_back(std::nullopt);
      i += 4;
    } else if (s[i] == '(') {
      const size_t close = s.find(')', i);
      if (close == std::string::npos) return bad();
      std::vector<int64_t> splits;
      std::stringstream in(s.substr(i + 1, close - i - 1));
      std::string part;
      while (std::getline(in, part, ',')) {
        if (part.empty()) continue;
        if (part.find_first_not_of("0123456789") != std::string::npos) return bad();
        splits.push_back(std::stoll(part));
      }
      items.emplace_back(std::move(splits));
      i = close + 1;
    } else {
      return bad();
    }
    if (i < s.size() && s[i] == ',') ++i;
  }
  return items;
}

std::string SplitsText(const std::vector<int64_t>& splits) {
  std::string s = "(";
  for (size_t d = 0; d < splits.size(); ++d) s += (d ? "," : "") + std::to_string(splits[d]);
  return s + (splits.size() == 1 ? ",)" : ")");
}

bool InScope(const std::string& name, const std::string& scope) {
  return name.size() > scope.size() && name.compare(0, scope.size(), scope) == 0 &&
         name[scope.size()] == '.';
}

}  // namespace

Status SearchGraph::ApplyShardBlocks() {
  const std::vector<ShardBlockSpec>& blocks = options_.shard_blocks;
  if (blocks.empty()) return Status::Ok();
  const Graph& forward = *graph_;
  std::vector<int> block_of(ops_.size(), -1);
  // "model.yaml:40:5: shard block 'block1'": messages start where the block was written.
  const auto named = [&](size_t b) {
    const ShardBlockSpec& block = blocks[b];
    return (block.source.empty() ? "" : block.source + ": ") + "shard block '" + block.scope + "'";
  };
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t j = 0; j < b; ++j) {
      if (blocks[j].scope == blocks[b].scope)
        return Status::Invalid(named(b) + " is sharded twice");
    }
    bool any = false;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (!InScope(ops_[i].name, blocks[b].scope)) continue;
      if (block_of[i] >= 0) {
        return Status::Invalid(named(b) + " overlaps shard block '" + blocks[block_of[i]].scope +
                               "' at operator '" + ops_[i].name + "'");
      }
      block_of[i] = static_cast<int>(b);
      any = true;
    }
    if (!any) {
      return Status::Invalid(named(b) + " names no module of the model (no operator '" +
                             blocks[b].scope + ".*')");
    }
  }
  // Outside every block: data-parallel.
  for (size_t i = 0; i < ops_.size(); ++i) {
    SearchOp& op = ops_[i];
    if (block_of[i] >= 0 || op.fixed) continue;
    const Parts dp = DataParallel(static_cast<int>(i));
    op.fixed = dp;
    op.fixed_text = Notation(static_cast<int>(i), dp);
    op.fixed_provenance = "outside shard blocks: data-parallel";
    op.candidates = {dp};
  }
  const auto layout_of = [&](const std::optional<std::vector<int64_t>>& item, size_t rank) {
    std::vector<int64_t> want(rank, 1);
    if (item) return *item;
    if (rank > 0) want[0] = options_.devices;  // None: data-parallel
    return want;
  };
  for (size_t b = 0; b < blocks.size(); ++b) {
    const ShardBlockSpec& block = blocks[b];
    const std::string what = named(b);
    // Boundary values in node order: read from outside the block / read outside it.
    std::vector<std::pair<int, int>> in_uses, out_uses;  // (op, input / output index)
    std::vector<ValueId> in_values, out_values;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (block_of[i] != static_cast<int>(b)) continue;
      const Node& n = forward.node(ops_[i].node);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Value& v = forward.value(n.inputs[k]);
        if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kConstant) continue;
        if (v.producer != kNoNode && InScope(forward.node(v.producer).name, block.scope)) continue;
        if (std::find(in_values.begin(), in_values.end(), v.id) == in_values.end())
          in_values.push_back(v.id);
        in_uses.emplace_back(static_cast<int>(i), static_cast<int>(k));
      }
      for (int e : ops_[i].edges) {
        const SearchEdge& edge = edges_[e];
        if (edge.producer != static_cast<int>(i) || block_of[edge.consumer] == static_cast<int>(b))
          continue;
        if (std::find(out_values.begin(), out_values.end(), edge.value) == out_values.end()) {
          out_values.push_back(edge.value);
          out_uses.emplace_back(static_cast<int>(i), edge.output);
        }
      }
    }
    for (int side = 0; side < 2; ++side) {
      const std::string& text = side == 0 ? block.in_strategy : block.out_strategy;
      if (text.empty()) continue;
      const std::string which = side == 0 ? "in_strategy" : "out_strategy";
      SHARDSCOPE_ASSIGN_OR_RETURN(auto items, ParseBoundary(text, what + " " + which));
      const std::vector<ValueId>& values = side == 0 ? in_values : out_values;
      if (items.size() != values.size()) {
        return Status::Invalid(what + ": the " + which + " " + text + " has " +
                               std::to_string(items.size()) + " entries but the block has " +
                               std::to_string(values.size()) + (side == 0 ? " input" : " output") +
                               (values.size() == 1 ? "" : "s"));
      }
      for (const auto& [op_index, slot] : side == 0 ? in_uses : out_uses) {
        SearchOp& op = ops_[op_index];
        const Node& n = forward.node(op.node);
        const ValueId v = side == 0 ? n.inputs[slot] : n.outputs[slot];
        const size_t item = std::find(values.begin(), values.end(), v) - values.begin();
        const std::string& letters = side == 0 ? op.sig.inputs[slot] : op.sig.outputs[slot];
        const std::vector<int64_t> want = layout_of(items[item], letters.size());
        if (want.size() != letters.size()) {
          return Status::Invalid(what + ": " + which + " entry " + SplitsText(want) + " has " +
                                 std::to_string(want.size()) + " dimensions but '" +
                                 forward.value(v).name + "' has " + std::to_string(letters.size()));
        }
        std::vector<Parts> kept;
        for (const Parts& p : op.candidates) {
          if (TensorParts(op_index, letters, p) == want) kept.push_back(p);
        }
        if (kept.empty()) {
          return Status::Invalid(
              what + ": no strategy of operator '" + op.name + "' on " +
              std::to_string(options_.devices) + " devices gives '" + forward.value(v).name + "' " +
              ShapeToString(forward.value(v).shape) + " the " + which + " layout " +
              SplitsText(want) + " (each split must divide its dimension)");
        }
        op.candidates = std::move(kept);
        op.narrowed = true;
      }
    }
    // The objective inside: level 2 keeps the step time (the searches' own cost); levels 0
    // and 1 first narrow each operator to its best candidates under their measure, the
    // searches then pick the fastest of those.
    if (block.level == 2) continue;
    for (size_t i = 0; i < ops_.size(); ++i) {
      SearchOp& op = ops_[i];
      if (block_of[i] != static_cast<int>(b) || op.fixed) continue;
      const auto measure = [&](const Parts& p) {
        const int o = static_cast<int>(i);
        if (block.level == 1) return OpMemory(o, p);
        // Level 0: communication per computation (lower is better).
        const double compute = op.flops / static_cast<double>(Product(p));
        return OpCommunication(o, p) / std::max(compute, 1.0);
      };
      double best = 1e300;
      for (const Parts& p : op.candidates) best = std::min(best, measure(p));
      std::vector<Parts> kept;
      for (const Parts& p : op.candidates) {
        if (measure(p) <= best * (1 + 1e-9) + 1e-30) kept.push_back(p);
      }
      op.candidates = std::move(kept);
      op.narrowed = true;
    }
  }
  return Status::Ok();
}

}  // namespace shardscope::search_internal

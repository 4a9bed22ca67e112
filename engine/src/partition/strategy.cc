#include "shardscope/strategy.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace shardscope {
namespace {

// Splits "(a, b(c,d), (e))" into its top-level elements; `text` must be one parenthesised
// tuple. Positions are 1-based columns for errors.
Result<std::vector<std::pair<std::string, int>>> TopLevelElements(const std::string& text) {
  size_t start = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  if (start == std::string::npos || text[start] != '(' || text[end] != ')') {
    return Status::Invalid("strategy '" + text +
                           "': expected a tuple in parentheses, e.g. ((2,4),(4,1))");
  }
  std::vector<std::pair<std::string, int>> out;
  int depth = 0;
  size_t elem = start + 1;
  for (size_t i = start + 1; i < end; ++i) {
    const char c = text[i];
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) {
      return Status::Invalid("strategy '" + text + "', column " + std::to_string(i + 1) +
                             ": unbalanced ')'");
    }
    if (c == ',' && depth == 0) {
      out.emplace_back(text.substr(elem, i - elem), static_cast<int>(elem + 1));
      elem = i + 1;
    }
  }
  if (depth != 0) return Status::Invalid("strategy '" + text + "': unbalanced '('");
  std::string last = text.substr(elem, end - elem);
  if (last.find_first_not_of(" \t") != std::string::npos)
    out.emplace_back(last, static_cast<int>(elem + 1));
  for (auto& [e, col] : out) {
    const size_t b = e.find_first_not_of(" \t"), f = e.find_last_not_of(" \t");
    if (b == std::string::npos)
      return Status::Invalid("strategy '" + text + "', column " + std::to_string(col) +
                             ": empty element");
    e = e.substr(b, f - b + 1);
    col += static_cast<int>(b);
  }
  return out;
}

Result<std::vector<int64_t>> ParseIntTuple(const std::string& text, const std::string& whole,
                                           int col) {
  auto elems = TopLevelElements(text);
  if (!elems.ok()) {
    return Status::Invalid("strategy '" + whole + "', column " + std::to_string(col) +
                           ": expected a tuple of split counts such as (2,4)");
  }
  std::vector<int64_t> v;
  for (auto& [e, c] : *elems) {
    if (e.empty() ||
        !std::all_of(e.begin(), e.end(), [](unsigned char ch) { return std::isdigit(ch); })) {
      return Status::Invalid("strategy '" + whole + "', column " + std::to_string(col + c - 1) +
                             ": expected a positive integer, found '" + e + "'");
    }
    v.push_back(std::stoll(e));
    if (v.back() < 1) {
      return Status::Invalid("strategy '" + whole + "', column " + std::to_string(col + c - 1) +
                             ": split counts must be ≥ 1");
    }
  }
  return v;
}

}  // namespace

Result<ParsedStrategy> ParseStrategy(const std::string& text,
                                     const std::map<std::string, DeviceMesh>& meshes) {
  SHARDSCOPE_ASSIGN_OR_RETURN(auto elems, TopLevelElements(text));
  ParsedStrategy s;
  s.text = text;
  if (elems.empty()) return Status::Invalid("strategy '" + text + "': empty tuple");
  const bool layouts = std::isalpha(static_cast<unsigned char>(elems[0].first[0])) &&
                       elems[0].first.rfind("None", 0) != 0;
  s.kind = layouts ? ParsedStrategy::kLayouts : ParsedStrategy::kSplits;
  for (auto& [e, col] : elems) {
    if (!layouts) {
      SHARDSCOPE_ASSIGN_OR_RETURN(auto v, ParseIntTuple(e, text, col));
      s.splits.push_back(std::move(v));
      continue;
    }
    if (e == "None") {
      s.layouts.push_back(std::nullopt);
      continue;
    }
    const size_t paren = e.find('(');
    const std::string name = e.substr(0, paren);
    auto it = meshes.find(name);
    if (paren == std::string::npos || it == meshes.end()) {
      std::string known;
      for (auto& [k, m] : meshes) known += (known.empty() ? "" : ", ") + k;
      return Status::Invalid(
          "strategy '" + text + "', column " + std::to_string(col) + ": '" + name +
          "' is not a declared mesh (declared: " + (known.empty() ? "none" : known) + ")");
    }
    if (!s.mesh_name.empty() && s.mesh_name != name) {
      return Status::Invalid("strategy '" + text + "', column " + std::to_string(col) +
                             ": all operands of one operator must use the same mesh (" +
                             s.mesh_name + " and " + name + ")");
    }
    s.mesh_name = name;
    s.mesh = it->second;
    auto axes = ParseLayoutCall(e, it->second);
    if (!axes.ok())
      return axes.status().WithContext("strategy '" + text + "', column " + std::to_string(col));
    s.layouts.push_back(std::move(*axes));
  }
  return s;
}

std::string SummedLetters(const ShardingSignature& sig, int out) {
  std::string summed;
  for (const std::string& in : sig.inputs) {
    for (char c : in) {
      if (sig.outputs[out].find(c) == std::string::npos && summed.find(c) == std::string::npos)
        summed += c;
    }
  }
  return summed;
}

Result<Layout> OpStrategy::LayoutOf(const std::string& letters, const Shape& shape,
                                    const std::string& partial_letters) const {
  DimAxes dims;
  for (char c : letters) {
    auto it = this->letters.find(c);
    dims.push_back(it == this->letters.end() ? std::vector<int>{} : it->second);
  }
  std::vector<int> partial;
  for (char c : partial_letters) {
    auto it = this->letters.find(c);
    if (it != this->letters.end())
      partial.insert(partial.end(), it->second.begin(), it->second.end());
  }
  std::sort(partial.begin(), partial.end());
  return Layout::Create(mesh, std::move(dims), std::move(partial), shape);
}

std::string OpStrategy::ToString() const {
  std::string s = "{";
  bool first = true;
  for (auto& [c, axes] : letters) {
    if (axes.empty()) continue;
    s += (first ? "" : ", ") + std::string(1, c) + ": ";
    for (size_t i = 0; i < axes.size(); ++i) s += (i ? "." : "") + mesh.axis_name(axes[i]);
    first = false;
  }
  return s + "} on " + mesh.ToString();
}

std::vector<size_t> OperandsByRank(const ShardingSignature& sig) {
  std::vector<size_t> order(sig.inputs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sig.inputs[a].size() > sig.inputs[b].size(); });
  return order;
}

Result<OpStrategy> ResolveStrategy(const std::string& op_name, const ParsedStrategy& st,
                                   const ShardingSignature& sig, const std::vector<Shape>& inputs,
                                   int devices) {
  const std::string where = "operator '" + op_name + "' strategy " + st.text;
  const size_t n_in = st.kind == ParsedStrategy::kSplits ? st.splits.size() : st.layouts.size();
  if (n_in != sig.inputs.size()) {
    return Status::Invalid(where + ": gives " + std::to_string(n_in) +
                           " operand(s), the operator has " + std::to_string(sig.inputs.size()));
  }
  OpStrategy out;
  out.provenance = "user: " + st.text;
  if (st.kind == ParsedStrategy::kSplits) {
    std::map<char, int64_t> parts;
    std::string order;
    for (size_t i = 0; i < st.splits.size(); ++i) {
      if (st.splits[i].size() != sig.inputs[i].size()) {
        return Status::Invalid(where + ": operand " + std::to_string(i) + " has " +
                               std::to_string(sig.inputs[i].size()) + " dimension(s) " +
                               ShapeToString(inputs[i]) + ", the strategy gives " +
                               std::to_string(st.splits[i].size()));
      }
      for (size_t d = 0; d < st.splits[i].size(); ++d) {
        const char c = sig.inputs[i][d];
        const int64_t k = st.splits[i][d];
        auto [it, fresh] = parts.emplace(c, k);
        if (!fresh && it->second != k) {
          return Status::Invalid(where + ": the same dimension is split in " +
                                 std::to_string(it->second) + " and in " + std::to_string(k) +
                                 " parts (operand " + std::to_string(i) + ", dimension " +
                                 std::to_string(d) + "); shared dimensions must agree");
        }
        if (k > 1 && sig.whole.find(c) != std::string::npos) {
          return Status::Invalid(
              where + ": operand " + std::to_string(i) + " dimension " + std::to_string(d) +
              " cannot be split (the operator needs it whole: softmax axis, normalised "
              "axis, convolution window or reshaped dimension)");
        }
        if (k > 1 && inputs[i][d] % k != 0) {
          return Status::Invalid(where + ": operand " + std::to_string(i) + " dimension " +
                                 std::to_string(d) + " of size " + std::to_string(inputs[i][d]) +
                                 " is not divisible by " + std::to_string(k));
        }
      }
    }
    // Mesh axes in order of appearance, operands of the highest rank first (SearchGraph
    // orders its letters alike): Where(mask, x, y) lays y's blocks on the ranks its producer
    // has them on, not in the mask's order, which cost a permutation each way.
    for (size_t i : OperandsByRank(sig)) {
      for (char c : sig.inputs[i]) {
        if (order.find(c) == std::string::npos) order += c;
      }
    }
    Shape shape;
    std::vector<std::string> names;
    int64_t used = 1;
    for (char c : order) {
      if (parts[c] == 1) continue;
      out.letters[c] = {static_cast<int>(shape.size())};
      shape.push_back(parts[c]);
      names.push_back(std::string(1, c));
      used *= parts[c];
    }
    if (used > devices || devices % used != 0) {
      return Status::Invalid(where + ": uses " + std::to_string(used) +
                             " devices, which does not divide the run's " +
                             std::to_string(devices));
    }
    if (used < devices) {
      shape.push_back(devices / used);
      names.push_back("rep");
    }
    SHARDSCOPE_ASSIGN_OR_RETURN(out.mesh, DeviceMesh::Create(shape, names));
    return out;
  }
  // Layout strategy: letters take the axes of the operand dimensions that carry them.
  if (st.mesh.size() != devices) {
    return Status::Invalid(where + ": mesh " + st.mesh_name + " " + st.mesh.ToString() + " has " +
                           std::to_string(st.mesh.size()) + " devices, the run has " +
                           std::to_string(devices));
  }
  out.mesh = st.mesh;
  for (size_t i = 0; i < st.layouts.size(); ++i) {
    if (!st.layouts[i]) continue;
    const DimAxes& dims = *st.layouts[i];
    if (dims.size() != sig.inputs[i].size()) {
      return Status::Invalid(where + ": operand " + std::to_string(i) + " has " +
                             std::to_string(sig.inputs[i].size()) +
                             " dimension(s), its layout gives " + std::to_string(dims.size()));
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      const char c = sig.inputs[i][d];
      auto [it, fresh] = out.letters.emplace(c, dims[d]);
      if (!fresh && it->second != dims[d]) {
        return Status::Invalid(where + ": operand " + std::to_string(i) + " dimension " +
                               std::to_string(d) +
                               " must be laid out like the same dimension of an earlier operand");
      }
      if (!dims[d].empty() && sig.whole.find(c) != std::string::npos) {
        return Status::Invalid(where + ": operand " + std::to_string(i) + " dimension " +
                               std::to_string(d) +
                               " cannot be split (the operator needs it whole)");
      }
    }
  }
  // Each operand layout must be valid on the mesh (divisibility, axes used once).
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    auto l = out.LayoutOf(sig.inputs[i], inputs[i]);
    if (!l.ok()) return l.status().WithContext(where + ": operand " + std::to_string(i));
  }
  return out;
}

OpStrategy DataParallelStrategy(const ShardingSignature& sig, const std::vector<Shape>& inputs,
                                int devices) {
  OpStrategy s;
  s.mesh = DeviceMesh::Create({devices}, {"dp"}).value();
  s.provenance = "data-parallel default";
  if (devices == 1 || sig.batch == 0) return s;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const size_t d = sig.inputs[i].find(sig.batch);
    if (d != std::string::npos && inputs[i][d] % devices != 0) {
      s.provenance = "replicated: batch dimension " + std::to_string(inputs[i][d]) +
                     " does not divide over " + std::to_string(devices) + " devices";
      return s;
    }
  }
  s.letters[sig.batch] = {0};
  return s;
}

}  // namespace shardscope

#include "graph_fold.h"

#include <QStringList>
#include <algorithm>
#include <cctype>
#include <set>

namespace shardscope::viewer::graph_detail {
namespace {

constexpr int kMaxPeriod = 8;  // units per repeated group at most (`dense3, relu3`: 2)
constexpr char kGrad[] = "grad.";

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// A backward operator's name without "grad.": `grad.<forward name>.<part>` names where it
// belongs (its forward_id may be a later layer's operator, as for a gradient sum).
std::string ForwardName(const store::OperatorRecord& op) {
  return op.is_backward && StartsWith(op.name, kGrad) ? op.name.substr(sizeof(kGrad) - 1) : op.name;
}

std::string ForwardScope(const RunData& run, const store::OperatorRecord& op) {
  if (!op.is_backward) return op.scope;
  const std::string name = ForwardName(op);
  if (const store::OperatorRecord* f = run.Operator(op.forward_id);
      f && !f->is_backward && StartsWith(name, f->name + ".")) {
    return f->scope;
  }
  // <scope>.<operator>.<part>: drop the last two components.
  size_t cut = name.rfind('.');
  if (cut != std::string::npos && cut > 0) cut = name.rfind('.', cut - 1);
  return cut == std::string::npos ? std::string() : name.substr(0, cut);
}

// "layer" of "layer17", "relu" of "relu_3", "model.layers." of "model.layers.3".
std::string Stem(const std::string& unit) {
  size_t end = unit.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(unit[end - 1]))) --end;
  while (end > 0 && unit[end - 1] == '_') --end;
  return unit.substr(0, end);
}

QString ClusterText(const std::string& cluster) {
  return StartsWith(cluster, kGrad)
             ? QString::fromUtf8("\u2207 ") + QString::fromStdString(cluster.substr(5))
             : QString::fromStdString(cluster);
}

// One entry of the top-level sequence: a unit, or an operator outside every unit.
struct Entry {
  std::string unit;       // "" for a lone operator
  std::string signature;  // of the forward operators: what a run of repeats matches on
  std::string backward;   // of the backward ones (the last layer's may differ: no gradient sum)
  std::vector<const store::OperatorRecord*> ops;
};

std::vector<Entry> Entries(const std::vector<const store::OperatorRecord*>& shown,
                           const GraphOptions& options) {
  std::vector<Entry> entries;
  std::map<std::string, size_t> unit_entry;
  for (const auto* op : shown) {
    const std::string unit = UnitOf(*op);  // empty, or a prefix of the forward name
    if (unit.empty()) {
      entries.push_back({"", "#" + std::to_string(op->id), "", {op}});
      continue;
    }
    // An opened unit stays one entry that matches nothing: the entries around it (and so
    // every other fold) are the same as with it folded.
    const bool open = options.expanded.count(unit) > 0;
    auto [it, fresh] = unit_entry.emplace(unit, entries.size());
    if (fresh) entries.push_back({open ? "" : unit, open ? "#" + unit : Stem(unit) + "\n", "", {}});
    Entry& e = entries[it->second];
    e.ops.push_back(op);
    if (open) continue;
    // The operator relative to its unit: same kinds and names in the same order repeat.
    std::string relative = op->name;
    if (const size_t at = relative.find(unit); at != std::string::npos) {
      relative.replace(at, unit.size(), "#");
    }
    // Units on different workers (pipeline stages) do not fold together.
    (op->is_backward ? e.backward : e.signature) +=
        op->kind + " " + relative + " @" + std::to_string(op->worker) + "\n";
  }
  return entries;
}

// Folds entries [begin, end) (repeats of `period` units): one node for the forward operators,
// one for the backward operators of the units whose backward matches the first repeat's;
// the other units' backward operators go to `rest`.
void AddFold(const std::vector<Entry>& entries, size_t begin, size_t period, size_t end,
             Grouping& g, std::vector<const store::OperatorRecord*>& rest) {
  QString kinds;
  if (period > 1) {
    QStringList stems;
    for (size_t j = 0; j < period; ++j) {
      stems << QString::fromStdString(Stem(entries[begin + j].unit));
    }
    kinds = "(" + stems.join(", ") + ") ";
  }
  // Backward operators fold where they match the most common backward of their position
  // (the first layer has no input gradient, the last no gradient sum).
  std::vector<std::string> usual(period);
  for (size_t p = 0; p < period; ++p) {
    std::map<std::string, int64_t> seen;
    int64_t most = 0;
    for (size_t j = begin + p; j < end; j += period) {
      if (++seen[entries[j].backward] > most)
        most = seen[entries[j].backward], usual[p] = entries[j].backward;
    }
  }
  for (bool bwd : {false, true}) {
    std::vector<size_t> units;
    for (size_t j = begin; j < end; ++j) {
      if (!bwd || entries[j].backward == usual[(j - begin) % period]) {
        units.push_back(j);
      } else {
        for (const auto* op : entries[j].ops) {
          if (op->is_backward) rest.push_back(op);
        }
      }
    }
    if (units.size() < 2 * period) {  // nothing repeats: drawn as they are, not "×1"
      for (size_t j : units) {
        for (const auto* op : entries[j].ops) {
          if (op->is_backward == bwd) rest.push_back(op);
        }
      }
      continue;
    }
    int64_t count = 0, worker = -2;
    for (size_t j : units) {
      for (const auto* op : entries[j].ops) {
        if (op->is_backward != bwd) continue;
        ++count;
        worker = worker == -2 || worker == op->worker ? op->worker : -1;
      }
    }
    if (count == 0) continue;
    const QString first = QString::fromStdString(entries[units.front()].unit);
    const QString last = QString::fromStdString(entries[units.back()].unit);
    const int64_t repeats = static_cast<int64_t>((units.size() + period - 1) / period);
    GroupNode n;
    n.key = "fold:" + entries[begin].unit + (bwd ? ":bwd" : "");
    n.item_key = entries[begin].unit;
    n.operators = count;
    n.worker = worker >= 0 ? worker : -1;
    n.label = QString("%1%2 \u2026 %3\n%4\u00d7%5 \u00b7 %6 operators each")
                  .arg(bwd ? QString::fromUtf8("\u2207 ") : QString(), first, last, kinds)
                  .arg(repeats)
                  .arg(count / repeats);
    if (n.worker >= 0) n.label += QString(" \u00b7 worker %1").arg(n.worker);
    n.tooltip = QString(
                    "%1 repeated %2 with the same %3 operators (%4 \u2026 %5); "
                    "open it to draw %6 in full")
                    .arg(repeats)
                    .arg(period > 1 ? "groups of units" : "units")
                    .arg(bwd ? "backward" : "forward")
                    .arg(first, last, QString::fromStdString(entries[begin].unit));
    for (size_t j : units) {
      for (const auto* op : entries[j].ops) {
        if (op->is_backward == bwd) g.grouped_in[op->id] = n.key;
      }
    }
    g.groups.push_back(std::move(n));
  }
  g.folded_units += static_cast<int64_t>(end - begin);
}

}  // namespace

std::vector<std::string> ScopePath(const std::string& scope, const std::string& root) {
  std::vector<std::string> path;
  if (scope.empty()) return path;
  if (!root.empty() && (scope == root || StartsWith(scope, root + "."))) {
    path.push_back(root);
    if (scope.size() > root.size()) {
      path.push_back(scope.substr(0, scope.find('.', root.size() + 1)));
    }
    return path;
  }
  size_t dot = scope.find('.');
  path.push_back(scope.substr(0, dot));
  if (dot != std::string::npos) {
    const size_t next = scope.find('.', dot + 1);
    path.push_back(scope.substr(0, next));
  }
  return path;
}

std::string UnitOf(const store::OperatorRecord& op) {
  const std::string name = ForwardName(op);
  size_t start = 0;
  while (start < name.size()) {
    const size_t dot = name.find('.', start);
    const size_t end = dot == std::string::npos ? name.size() : dot;
    if (end > start && std::isdigit(static_cast<unsigned char>(name[end - 1]))) {
      return name.substr(0, end);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return "";
}

Grouping GroupOperators(const RunData& run, const std::vector<const store::OperatorRecord*>& shown,
                        const GraphOptions& options, int collapse_above, bool fold) {
  Grouping g;
  std::vector<const store::OperatorRecord*> rest;  // not folded
  if (fold && !options.partitioned) {
    const std::vector<Entry> entries = Entries(shown, options);
    size_t i = 0;
    while (i < entries.size()) {
      size_t best_k = 0, best_r = 1;
      for (size_t k = 1; k <= static_cast<size_t>(kMaxPeriod) && i + k <= entries.size(); ++k) {
        bool units = true;
        for (size_t j = 0; j < k; ++j) units = units && !entries[i + j].unit.empty();
        if (!units) break;
        size_t r = 1;
        while (i + (r + 1) * k <= entries.size()) {
          bool same = true;
          for (size_t j = 0; j < k && same; ++j) {
            same = entries[i + r * k + j].signature == entries[i + j].signature;
          }
          if (!same) break;
          ++r;
        }
        if (r >= 2 && k * r > best_k * best_r) best_k = k, best_r = r;
      }
      if (best_k == 0) {
        rest.insert(rest.end(), entries[i].ops.begin(), entries[i].ops.end());
        ++i;
        continue;
      }
      const size_t end = i + best_k * best_r;
      AddFold(entries, i, best_k, end, g, rest);
      i = end;
    }
    std::sort(rest.begin(), rest.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  } else {
    rest = shown;
  }

  // Clusters by scope (or by worker) for what is not folded.
  auto cluster_path = [&](const store::OperatorRecord& op) {
    std::vector<std::string> path;
    if (options.partitioned) {
      path.push_back(op.worker == store::kNone ? "unplaced"
                                               : "worker " + std::to_string(op.worker));
      return path;
    }
    // An opened unit is its operators' outer cluster ("layers.0", not "layers").
    const std::string unit = UnitOf(op);
    path = ScopePath(ForwardScope(run, op), options.expanded.count(unit) ? unit : "");
    if (op.is_backward) {
      for (std::string& c : path) c = kGrad + c;
    }
    return path;
  };
  std::map<std::string, int64_t> count;
  for (const auto* op : rest) {
    for (const auto& c : cluster_path(*op)) ++count[c];
  }
  std::map<std::string, size_t> scope_group;
  for (const auto* op : rest) {
    std::string cluster;
    for (const auto& c : cluster_path(*op)) {
      const bool collapse =
          !options.partitioned && (options.collapsed.count(c) > 0 ||
                                   (count[c] > collapse_above && options.expanded.count(c) == 0));
      if (collapse) {
        auto [it, fresh] = scope_group.emplace(c, g.groups.size());
        if (fresh) {
          GroupNode n;
          n.key = "scope:" + c;
          n.item_key = c;
          n.cluster = cluster;
          n.operators = count[c];
          n.label = ClusterText(c) + "\n" + QString::number(count[c]) + " operators";
          n.tooltip = "scope " + ClusterText(c) + " (collapsed; expand to see it)";
          g.groups.push_back(std::move(n));
        }
        g.grouped_in[op->id] = g.groups[it->second].key;
        break;
      }
      if (!g.cluster_label.count(c)) {
        g.cluster_parent[c] = cluster;
        g.cluster_label[c] = ClusterText(c);
      }
      cluster = c;
    }
    if (!g.grouped_in.count(op->id)) g.cluster_of[op->id] = cluster;
  }
  return g;
}

}  // namespace shardscope::viewer::graph_detail

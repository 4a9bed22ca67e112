// SearchStrategies: builds the search graph, runs a mode, explains the result (search.h).
#include "shardscope/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "search/search_graph.h"
#include "shardscope/base/names.h"
#include "shardscope/strategy.h"

namespace shardscope {

using search_internal::Assignment;
using search_internal::Parts;
using search_internal::SearchGraph;

const char* SearchModeName(SearchMode mode) {
  switch (mode) {
    case SearchMode::kSemiAuto:
      return "semi_auto";
    case SearchMode::kShardingPropagation:
      return "sharding_propagation";
    case SearchMode::kRecursiveProgramming:
      return "recursive_programming";
    case SearchMode::kDynamicProgramming:
      return "dynamic_programming";
  }
  return "?";
}

Result<SearchMode> ParseSearchMode(const std::string& name) {
  std::vector<std::string> known;
  for (SearchMode m : {SearchMode::kSemiAuto, SearchMode::kShardingPropagation,
                       SearchMode::kRecursiveProgramming, SearchMode::kDynamicProgramming}) {
    if (name == SearchModeName(m)) return m;
    known.push_back(SearchModeName(m));
  }
  return Status::Invalid("unknown search mode '" + name + "'" + DidYouMean(name, known) +
                         " (known: semi_auto, sharding_propagation, recursive_programming, "
                         "dynamic_programming)");
}

namespace {

// semi_auto: the user's strategies, the data-parallel default elsewhere.
Assignment SemiAuto(const SearchGraph& g) {
  Assignment a;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const auto& op = g.ops()[i];
    a.parts.push_back(op.fixed ? *op.fixed : g.DataParallel(static_cast<int>(i)));
    a.provenance.push_back(op.fixed ? op.fixed_provenance : "semi_auto: data-parallel default");
  }
  return a;
}

// `own`: OpCost(v, p), which the caller reports too.
double LocalCost(const SearchGraph& g, int v, const Parts& p, const std::vector<Parts>& parts,
                 double own) {
  double c = own;
  for (int e : g.ops()[v].edges) c += g.EdgeCostAmong(e, v, p, parts, nullptr);
  return c;
}

SearchResult Explain(const SearchGraph& g, const Assignment& a, const SearchOptions& o) {
  SearchResult r;
  r.mode = o.mode;
  r.devices = o.devices;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const int v = static_cast<int>(i);
    const auto& op = g.ops()[i];
    OperatorChoice c;
    c.node = op.node;
    c.name = op.name;
    c.strategy = op.fixed ? op.fixed_text : g.Notation(v, a.parts[i]);
    c.provenance = a.provenance[i];
    c.compute_s = g.OpCost(v, a.parts[i]);
    c.local_cost_s = LocalCost(g, v, a.parts[i], a.parts, c.compute_s);
    c.memory_bytes = g.OpMemory(v, a.parts[i]);
    if (!op.fixed) {
      // Every candidate scored, only the top_k kept are named and measured.
      struct Scored {
        double cost_s, compute_s;
        const Parts* parts;
      };
      std::vector<Scored> scored;
      for (const Parts& p : op.candidates) {
        if (p == a.parts[i]) continue;
        const double own = g.OpCost(v, p);
        scored.push_back({LocalCost(g, v, p, a.parts, own), own, &p});
      }
      std::stable_sort(scored.begin(), scored.end(),
                       [](const auto& x, const auto& y) { return x.cost_s < y.cost_s; });
      if (static_cast<int>(scored.size()) > o.top_k) scored.resize(std::max(0, o.top_k));
      std::vector<ScoredCandidate> others;
      for (const Scored& s : scored)
        others.push_back({g.Notation(v, *s.parts), s.cost_s, s.compute_s, g.OpMemory(v, *s.parts)});
      c.runners_up = std::move(others);
    }
    r.compute_seconds += c.compute_s;
    r.memory_per_device_bytes += c.memory_bytes;
    r.operators.push_back(std::move(c));
  }
  r.step_seconds = g.Total(a.parts);
  const SearchGraph::Breakdown b = g.Explain(a.parts);
  r.operator_seconds = b.compute_s;
  r.collectives = b.collectives;
  return r;
}

}  // namespace

namespace {

// dynamic_programming could not reduce the graph: recursive_programming decided, and the
// optimum is at least every operator's cheapest own cost (edges cost nothing or more).
std::string FallbackNote(const SearchGraph& g, const SearchResult& r, const std::string& why) {
  double bound = 0;
  for (const search_internal::SearchOp& op : g.ops()) {
    if (!op.own_cost.empty()) bound += *std::min_element(op.own_cost.begin(), op.own_cost.end());
  }
  char gap[160];
  std::snprintf(gap, sizeof gap,
                "objective %.6g s, at most %.3g %% above the optimum (lower bound %.6g s: every "
                "operator at its cheapest own cost, redistribution free)",
                r.step_seconds, bound > 0 ? 100.0 * (r.step_seconds - bound) / bound : 0.0, bound);
  return why.substr(0, why.find("; use ")) + "; the strategies are recursive_programming's: " + gap;
}

// --bucket-mb auto: `a` priced with each bucket size (and one bucket of every gradient), `g`
// left at the cheapest; returns its price (Total with the memory option's collectives). Larger
// buckets pay the collectives' latency fewer times; smaller ones start sooner in the backward
// and leave less exposed after it (gradient_overlap.h).
double CheapestBucket(const Assignment& a, const SearchOptions& options, SearchGraph* g) {
  std::vector<double> sizes = options.gradient_bucket_choices;
  if (sizes.empty()) return g->Total(a.parts) + g->OptionSeconds(a.parts);
  const double all = std::ceil(g->GradientBytes() / (1 << 20)) * (1 << 20);
  if (all > *std::max_element(sizes.begin(), sizes.end())) sizes.push_back(all);
  double best = -1, best_seconds = 0;
  for (double bytes : sizes) {
    g->SetGradientBucket(bytes);
    const double seconds = g->Total(a.parts) + g->OptionSeconds(a.parts);
    if (best < 0 || seconds < best_seconds) {
      best = bytes;
      best_seconds = seconds;
    }
  }
  g->SetGradientBucket(best);
  return best_seconds;
}

}  // namespace

Result<SearchResult> SearchStrategies(const Graph& forward, const SearchOptions& options) {
  if (options.mode == SearchMode::kSemiAuto && !options.shard_blocks.empty()) {
    const ShardBlockSpec& block = options.shard_blocks[0];
    return Status::Invalid((block.source.empty() ? "" : block.source + ": ") + "shard block '" +
                           block.scope +
                           "' is searched inside, which semi_auto does not do; use "
                           "sharding_propagation, recursive_programming or dynamic_programming");
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchGraph g, SearchGraph::Build(forward, options));
  g.CacheOwnCosts();
  std::string unreduced;           // why dynamic_programming fell back, if it did
  SearchMode mode = options.mode;  // what `run` runs (dynamic_programming compares the others)
  const search_internal::RunSearch run = [&](const SearchGraph& sg) -> Result<Assignment> {
    switch (mode) {
      case SearchMode::kSemiAuto:
        return SemiAuto(sg);
      case SearchMode::kShardingPropagation:
        return search_internal::RunPropagation(sg);
      case SearchMode::kRecursiveProgramming:
        return search_internal::RunRecursive(sg);
      case SearchMode::kDynamicProgramming: {
        Result<Assignment> dp = search_internal::RunDynamicProgramming(sg);
        if (dp.ok() || (dp.status().message().find("does not reduce") == std::string::npos &&
                        dp.status().message().find("effort budget") == std::string::npos))
          return dp;
        unreduced = dp.status().message();
        return search_internal::RunRecursive(sg);
      }
    }
    return Status::Invalid("unknown search mode");
  };
  // With overlap_gradients the objective (Total) is no sum over operators and edges: the
  // searches run with the reductions at full price, then with those the first plan hides free
  // and those in the stream's exposed tail whole (GradientOverlap::critical), then with all
  // free; data parallelism is a candidate too. The plan Total prices lowest among those within
  // the memory budget (as the first fits or not) is kept.
  const search_internal::RunSearch overlapped = [&](const SearchGraph& sg) -> Result<Assignment> {
    SHARDSCOPE_ASSIGN_OR_RETURN(Assignment best, run(sg));
    // Not inside the memory search's weighted runs (SearchWithinMemory): each is one run.
    if (!options.cost.overlap_gradients || mode == SearchMode::kSemiAuto || sg.memory_weight() > 0)
      return best;
    double serial = 0;
    const GradientOverlap o = sg.Overlap(best.parts, &serial);
    if (o.hidden_seconds() <= 0) return best;
    const double cap = options.memory_budget_bytes * options.memory_target;
    const auto fits = [&](const Assignment& a) {
      return cap <= 0 || sg.AssignmentMemory(a.parts) <= cap;
    };
    const bool first_fits = fits(best);
    // Each plan at its cheapest gradient bucket (--bucket-mb auto), as the result is priced.
    SearchGraph buckets = sg;
    double best_total = CheapestBucket(best, options, &buckets);
    const auto consider = [&](Assignment a) {
      const double total = CheapestBucket(a, options, &buckets);
      if (total < best_total && (fits(a) || !first_fits)) {
        best = std::move(a);
        best_total = total;
      }
    };
    const size_t n = sg.ops().size();
    std::vector<double> weights(n);
    for (size_t i = 0; i < n; ++i) weights[i] = o.critical[n - 1 - i];
    // No exposed tail (every weight 0): the second run is the third; run it once.
    const bool tail = std::find(o.critical.begin(), o.critical.end(), 1) != o.critical.end();
    SearchGraph weighted = sg;
    if (tail) {
      weighted.SetGradientWeights(std::move(weights));
      SHARDSCOPE_ASSIGN_OR_RETURN(Assignment second, run(weighted));
      consider(std::move(second));
    }
    weighted.SetGradientWeights(std::vector<double>(n, 0.0));
    SHARDSCOPE_ASSIGN_OR_RETURN(Assignment third, run(weighted));
    consider(std::move(third));
    // Data parallelism, as DDP runs it (an operator without a batch dimension replicated).
    Assignment data_parallel = best;
    for (size_t i = 0; i < n; ++i) {
      const search_internal::SearchOp& op = sg.ops()[i];
      if (op.fixed || op.narrowed) return best;
      data_parallel.parts[i] = sg.DataParallel(static_cast<int>(i));
      data_parallel.provenance[i] =
          "data parallel: priced below the search's plans with gradients overlapped";
    }
    consider(std::move(data_parallel));
    return best;
  };
  std::optional<SearchGraph> unsearched;  // dynamic_programming: the graph for the others
  if (options.mode == SearchMode::kDynamicProgramming) unsearched = g;
  SHARDSCOPE_ASSIGN_OR_RETURN(search_internal::MemoryChoice memory,
                              search_internal::SearchWithinMemory(g, overlapped));
  // dynamic_programming's plan is the pairwise optimum improved by a descent on the objective;
  // the greedy modes' plans are candidates too (each within the memory budget as they run), so
  // its objective is never above theirs: a plan that fits first, then the lower objective.
  if (options.mode == SearchMode::kDynamicProgramming && unreduced.empty()) {
    const auto price = [](const SearchGraph& sg, const Assignment& a) {
      return sg.Total(a.parts) + sg.OptionSeconds(a.parts);
    };
    double best = price(g, memory.assignment);
    for (SearchMode other_mode :
         {SearchMode::kRecursiveProgramming, SearchMode::kShardingPropagation}) {
      mode = other_mode;
      SearchGraph other = *unsearched;
      SHARDSCOPE_ASSIGN_OR_RETURN(search_internal::MemoryChoice choice,
                                  search_internal::SearchWithinMemory(other, overlapped));
      const double p = price(other, choice.assignment);
      if (choice.fits != memory.fits ? !choice.fits : p >= best * (1 - 1e-12)) continue;
      for (size_t i = 0; i < other.ops().size(); ++i) {
        if (other.ops()[i].fixed) continue;
        std::string& why = choice.assignment.provenance[i];
        why = std::string("dynamic_programming: ") + SearchModeName(other_mode) +
              "'s plan, its objective below the pairwise optimum's: " + why;
      }
      memory = std::move(choice);
      g = std::move(other);
      best = p;
    }
  }
  const Assignment& a = memory.assignment;
  CheapestBucket(a, options, &g);
  g.RefreshOwnCosts();
  SearchResult r = Explain(g, a, options);
  r.gradient_bucket_bytes = g.options().cost.gradient_bucket_bytes;
  if (!unreduced.empty()) r.note = FallbackNote(g, r, unreduced);
  r.optimizer_sharding = memory.option.zero;
  r.recompute = memory.option.recompute;
  r.memory_estimate_bytes = memory.memory_bytes;
  r.memory_fits = memory.fits;
  r.memory_note = memory.note;
  // The chosen option's collectives and replays are part of the step the plan runs.
  r.step_seconds += g.OptionSeconds(a.parts);
  if (options.memory_budget_bytes > 0)
    r.memory_options = search_internal::EstimateMemoryOptions(g, a.parts);
  return r;
}

Status ApplySearchResult(const SearchResult& result, Graph* graph) {
  for (const OperatorChoice& c : result.operators) {
    const NodeId id = graph->FindNode(c.name);
    if (id == kNoNode) return Status::NotFound("strategy for unknown operator '" + c.name + "'");
    OpAnnotations& ann = graph->mutable_node(id).annotations;
    if (ann.in_strategy.empty()) ann.in_strategy = c.strategy;
  }
  return Status::Ok();
}

std::string SearchResultToJson(const SearchResult& r, int indent) {
  nlohmann::ordered_json j;
  j["devices"] = r.devices;
  j["search"] = SearchModeName(r.mode);
  // The search's objective, not a prediction: `plan` prices the partitioned program for that.
  j["search_objective_seconds"] = r.step_seconds;
  j["search_objective_compute_seconds"] = r.operator_seconds;
  j["search_objective_collectives"] = r.collectives;
  j["memory_per_device_bytes"] = r.memory_per_device_bytes;
  if (!r.note.empty()) j["note"] = r.note;
  j["search_memory_estimate_bytes"] = r.memory_estimate_bytes;
  j["search_memory_fits"] = r.memory_fits;
  if (!r.memory_note.empty()) j["search_memory_note"] = r.memory_note;
  j["search_optimizer_sharding"] = r.optimizer_sharding;
  j["search_recompute"] = r.recompute;
  j["gradient_bucket_bytes"] = r.gradient_bucket_bytes;
  j["operators"] = nlohmann::ordered_json::array();
  for (const OperatorChoice& c : r.operators) {
    nlohmann::ordered_json o;
    o["name"] = c.name;
    o["strategy"] = c.strategy;
    o["provenance"] = c.provenance;
    o["cost_s"] = c.local_cost_s;
    o["memory_bytes"] = c.memory_bytes;
    o["runners_up"] = nlohmann::ordered_json::array();
    for (const ScoredCandidate& s : c.runners_up)
      o["runners_up"].push_back({{"strategy", s.strategy}, {"cost_s", s.cost_s}});
    j["operators"].push_back(std::move(o));
  }
  return j.dump(indent);
}

namespace {

// One operator's strategy from a file, as the user's; layout notation needs the model's named
// meshes, so only the splits notation is checked here (layouts when partitioned).
Status SetStrategy(const std::string& where, const std::string& name, const std::string& strategy,
                   Graph* graph) {
  const NodeId id = graph->FindNode(name);
  if (id == kNoNode) return Status::NotFound(where + ": the model has no operator '" + name + "'");
  auto parsed = ParseStrategy(strategy, {});
  if (!parsed.ok() && parsed.status().message().find("not a declared mesh") == std::string::npos)
    return parsed.status().WithContext(where);
  graph->mutable_node(id).annotations.in_strategy = strategy;
  return Status::Ok();
}

// MindSpore's strategy checkpoint in JSON (parallel_strategy_item: per operator, the split
// counts of each input; docs/export.md). Its parameter layouts follow from the strategies.
Result<int> LoadMindSporeStrategies(const std::string& path, const nlohmann::json& items,
                                    Graph* graph) {
  if (!items.is_object())
    return Status::Invalid(path + ": parallel_strategy_item must be an object (operator -> ...)");
  int count = 0;
  for (const auto& [name, item] : items.items()) {
    const std::string where = path + ": parallel_strategy_item \"" + name + "\"";
    if (!item.is_object() || !item.contains("parallel_strategy") ||
        !item["parallel_strategy"].is_array()) {
      return Status::Invalid(where + ": needs a \"parallel_strategy\" array of split counts");
    }
    std::string text = "(";
    const auto& inputs = item["parallel_strategy"];
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].is_array())
        return Status::Invalid(where + ": input " + std::to_string(i) +
                               " is not an array of split counts");
      text += i ? ", (" : "(";
      for (size_t d = 0; d < inputs[i].size(); ++d) {
        if (!inputs[i][d].is_number_integer() || inputs[i][d].get<int64_t>() < 1)
          return Status::Invalid(where + ": split counts must be integers >= 1");
        text += (d ? ", " : "") + std::to_string(inputs[i][d].get<int64_t>());
      }
      text += inputs[i].size() == 1 ? ",)" : ")";
    }
    text += inputs.size() == 1 ? ",)" : ")";
    Status st = SetStrategy(where, name, text, graph);
    if (st.code() == StatusCode::kNotFound) {
      return Status::NotFound(st.message() +
                              " (operator names must be the model's, as `plan --export "
                              "mindspore` writes them, not MindSpore's network paths)");
    }
    SHARDSCOPE_RETURN_IF_ERROR(st);
    ++count;
  }
  return count;
}

}  // namespace

Result<int> LoadStrategyFile(const std::string& path, Graph* graph) {
  std::ifstream in(path);
  if (!in) return Status::Io(path + ": cannot open strategy file");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("parallel_strategy_item"))
    return LoadMindSporeStrategies(path, j["parallel_strategy_item"], graph);
  if (j.is_discarded() || !j.is_object() || !j.contains("operators") ||
      !j["operators"].is_array()) {
    return Status::Invalid(path +
                           ": not a strategy file (expected a JSON object with an "
                           "\"operators\" array, as --save-strategy writes, or MindSpore's "
                           "strategy checkpoint in JSON with \"parallel_strategy_item\"; "
                           "MindSpore's binary .ckpt form is not read: save it with a .json name)");
  }
  int count = 0;
  for (size_t i = 0; i < j["operators"].size(); ++i) {
    const auto& o = j["operators"][i];
    const std::string where = path + ": operators[" + std::to_string(i) + "]";
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string() ||
        !o.contains("strategy") || !o["strategy"].is_string()) {
      return Status::Invalid(where + ": needs string fields \"name\" and \"strategy\"");
    }
    SHARDSCOPE_RETURN_IF_ERROR(SetStrategy(where, o["name"], o["strategy"], graph));
    ++count;
  }
  return count;
}

Result<double> PredictStepSeconds(const Graph& forward, const SearchOptions& options) {
  SearchOptions o = options;
  o.mode = SearchMode::kSemiAuto;
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult r, SearchStrategies(forward, o));
  return r.step_seconds;
}

}  // namespace shardscope

#include "shardscope/memory_fit.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "shardscope/base/format.h"

namespace shardscope {

std::string MemoryCandidate::Label() const {
  std::string text = optimizer_sharding > 0 ? "ZeRO " + std::to_string(optimizer_sharding) : "";
  if (!recompute.empty()) {
    if (!text.empty()) text += ", ";
    text += recompute == std::vector<std::string>{"*"}
                ? "recompute every layer"
                : "recompute " + std::to_string(recompute.size()) + " layer scope(s)";
  }
  return text.empty() ? "no memory option" : text;
}

std::string LayerScopeOf(const std::string& name) {
  // The prefix up to the first numbered part ("layers.3", "h.11"), else the top level.
  for (size_t at = name.find('.'); at != std::string::npos; at = name.find('.', at + 1)) {
    const size_t next = name.find('.', at + 1);
    const std::string part = name.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      return next == std::string::npos ? name.substr(0, name.find('.')) : name.substr(0, next);
  }
  return name.substr(0, name.find('.'));
}

std::vector<std::string> LayerScopes(const Graph& graph) {
  std::vector<std::string> scopes;
  std::set<std::string> seen;
  for (const Node& n : graph.nodes()) {
    if (n.is_backward) continue;
    if (n.name.find('.') == std::string::npos) continue;
    const std::string scope = LayerScopeOf(n.name);
    if (seen.insert(scope).second) scopes.push_back(scope);
  }
  return scopes;
}

Result<MemoryFit> FitMemory(const Graph& graph, const SearchOptions& options,
                            const MemoryFitRequest& request, DistProgram asked,
                            const PartitionWith& partition, const MemoryOf& memory) {
  MemoryFit fit;
  auto try_one = [&](int zero, const std::vector<std::string>& recompute,
                     DistProgram program) -> Status {
    MemoryCandidate c{zero, recompute, {}, 0, false};
    SHARDSCOPE_ASSIGN_OR_RETURN(c.memory, memory(program));
    SHARDSCOPE_ASSIGN_OR_RETURN(ProgramPrice price, PriceProgram(graph, program, options));
    c.step_seconds = price.step_seconds;
    c.fits = request.capacity_bytes <= 0 ||
             static_cast<double>(c.memory.total) <= request.capacity_bytes;
    // Kept: the first that fits and then any cheaper one that fits; while none fits, the least.
    const MemoryCandidate* best = fit.tried.empty() ? nullptr : &fit.chosen;
    const bool better = best == nullptr ||
                        (c.fits && (!best->fits || c.step_seconds < best->step_seconds)) ||
                        (!c.fits && !best->fits && c.memory.total < best->memory.total);
    fit.tried.push_back(c);
    if (better) {
      fit.chosen = c;
      fit.program = std::move(program);
      fit.price = price;
    }
    return Status::Ok();
  };
  const int asked_zero = request.optimizer_sharding.value_or(request.first_optimizer_sharding);
  const std::vector<std::string> asked_recompute =
      request.recompute.value_or(request.first_recompute);
  SHARDSCOPE_RETURN_IF_ERROR(try_one(asked_zero, asked_recompute, std::move(asked)));
  const std::string capacity = FormatBytes(request.capacity_bytes);
  if (request.capacity_bytes <= 0) {
    fit.why = "no device memory known (--cluster or --memory-budget): the options as asked";
    return fit;
  }
  if (fit.chosen.fits) {
    const bool searched = (!request.optimizer_sharding && request.first_optimizer_sharding != 0) ||
                          (!request.recompute && !request.first_recompute.empty());
    fit.why = "fits the " + capacity + " per device " +
              (searched ? "with the options the search chose" : "as asked");
    return fit;
  }
  std::vector<int> stages = {0, 1, 2, 3};
  if (request.optimizer_sharding) stages = {*request.optimizer_sharding};
  std::vector<std::vector<std::string>> recomputes = {{}, LayerScopes(graph)};
  if (recomputes[1].empty()) recomputes.pop_back();
  if (request.recompute) recomputes = {*request.recompute};
  // Options whose estimate (below the measured peak: it leaves temporaries out) cannot fit
  // are not partitioned (the slow part); the least of them is when nothing else is left.
  const auto estimate = [&](int zero, const std::vector<std::string>& recompute) {
    for (const MemoryOptionEstimate& e : request.estimates)
      if (e.optimizer_sharding == zero && e.recompute == recompute) return e.memory_bytes;
    return -1.0;
  };
  std::vector<std::pair<int, std::vector<std::string>>> pruned;
  double least_pruned = 0;
  size_t least_at = 0;
  for (const auto& recompute : recomputes) {
    for (int zero : stages) {
      if (zero == asked_zero && recompute == asked_recompute) continue;
      const double estimated = estimate(zero, recompute);
      if (estimated > request.capacity_bytes * MemoryFitRequest::kEstimateSlack) {
        if (pruned.empty() || estimated < least_pruned) {
          least_pruned = estimated;
          least_at = pruned.size();
        }
        pruned.emplace_back(zero, recompute);
        continue;
      }
      SHARDSCOPE_ASSIGN_OR_RETURN(DistProgram program, partition(zero, recompute));
      SHARDSCOPE_RETURN_IF_ERROR(try_one(zero, recompute, std::move(program)));
    }
  }
  if (!fit.chosen.fits && !pruned.empty()) {
    const auto& [zero, recompute] = pruned[least_at];
    SHARDSCOPE_ASSIGN_OR_RETURN(DistProgram program, partition(zero, recompute));
    SHARDSCOPE_RETURN_IF_ERROR(try_one(zero, recompute, std::move(program)));
    pruned.erase(pruned.begin() + static_cast<std::ptrdiff_t>(least_at));
  }
  fit.skipped = static_cast<int>(pruned.size());
  fit.fits = fit.chosen.fits;
  int fitting = 0;
  for (const MemoryCandidate& c : fit.tried) fitting += c.fits ? 1 : 0;
  const std::string as_asked = fit.tried[0].Label();
  const std::string skipped =
      fit.skipped == 0 ? ""
                       : "; " + std::to_string(fit.skipped) +
                             " more not partitioned: their estimate exceeds the capacity";
  if (fit.fits) {
    fit.why = as_asked + " needs " + FormatBytes(static_cast<double>(fit.tried[0].memory.total)) +
              ", more than the " + capacity + " per device; " + fit.chosen.Label() +
              " fits and is the cheapest by predicted step of " + std::to_string(fitting) + " of " +
              std::to_string(fit.tried.size()) + " option(s) tried that fit" + skipped;
  } else {
    fit.why = "none of " + std::to_string(fit.tried.size()) + " option(s) tried fits the " +
              capacity + " per device; the least is " + fit.chosen.Label() + skipped;
  }
  return fit;
}

PartitionWith RepartitionWith(const Graph& graph, const DistProgram& program,
                              const PartitionOptions& base) {
  TrainingValues tv;
  tv.loss = program.values[program.loss].global;
  for (const auto& [param, grad] : program.param_grads) {
    tv.params.push_back(program.values[param].global);
    tv.grads.push_back(program.values[grad].global);
  }
  return [&graph, tv, base](int zero, const std::vector<std::string>& recompute) {
    PartitionOptions o = base;
    o.optimizer_sharding = zero;
    o.recompute = recompute;
    return Partition(graph, tv, o);
  };
}

}  // namespace shardscope

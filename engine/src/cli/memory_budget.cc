#include "cli/memory_budget.h"

#include <cstdio>

#include "cli/resource_checks.h"
#include "shardscope/base/format.h"
#include "shardscope/cost/cluster.h"
#include "shardscope/optimizer.h"

namespace shardscope::cli {
namespace {

std::string Bytes(double bytes) { return FormatBytes(bytes); }

}  // namespace

Result<PlanMemory> FitPlanMemory(const ModelFile& mf, const Graph& graph,
                                 const DistProgram& program, const PartitionOptions& partition,
                                 const SearchOptions& options, const SearchFlags& flags,
                                 const SearchResult* searched) {
  PlanMemory m;
  if (!flags.cluster.empty()) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ClusterProfile cluster, LoadClusterProfile(flags.cluster));
    m.capacity_bytes = cluster.memory_bytes;
    m.capacity_from = "cluster " + cluster.name;
  }
  const double budget = flags.memory_budget_mb * 1e6;
  if (budget > 0 && (m.capacity_bytes <= 0 || budget < m.capacity_bytes)) {
    m.capacity_bytes = budget;
    char mb[32];
    std::snprintf(mb, sizeof mb, "%g", flags.memory_budget_mb);
    m.capacity_from = std::string("--memory-budget ") + mb + " MB";
  }
  const ParallelConfig& parallel = mf.parallel();
  MemoryFitRequest request;
  request.capacity_bytes = m.capacity_bytes;
  if (!OptimizerShardingAuto(flags, parallel))
    request.optimizer_sharding = partition.optimizer_sharding;
  if (!RecomputeAuto(flags, parallel)) request.recompute = partition.recompute;
  request.first_optimizer_sharding = partition.optimizer_sharding;
  request.first_recompute = partition.recompute;
  if (searched != nullptr) request.estimates = searched->memory_options;
  const Precision dtype = options.dtype;
  const MemoryOf memory = [&](const DistProgram& p) {
    return PlannedRankMemory(mf, graph, p, dtype);
  };
  SHARDSCOPE_ASSIGN_OR_RETURN(m.fit, FitMemory(graph, options, request, program,
                                               RepartitionWith(graph, program, partition), memory));
  return m;
}

Result<int64_t> SearchedPlanPeak(const ModelFile& mf, const ModelGraph& model,
                                 const SearchResult& searched, const SearchFlags& flags,
                                 PartitionOptions partition) {
  TakeSearchMemoryChoices(searched, flags, mf.parallel(), &partition);
  SHARDSCOPE_ASSIGN_OR_RETURN(
      SearchOptions options,
      MakeSearchOptions(flags, SearchMode::kSemiAuto, partition.devices, partition.meshes));
  ModelGraph planned = model;  // planning differentiates it; the caller plans it again
  SHARDSCOPE_ASSIGN_OR_RETURN(DistProgram program, PlanTrainingProgram(&planned, partition));
  SHARDSCOPE_ASSIGN_OR_RETURN(RankMemory m,
                              PlannedRankMemory(mf, planned.graph, program, options.dtype));
  return m.total;
}

std::string NothingFitsMessage(const ModelFile& mf, const PlanMemory& m) {
  const MemoryCandidate& c = m.fit.chosen;
  std::string text = mf.path() + ": the plan does not fit the " + Bytes(m.capacity_bytes) +
                     " of device memory (" + m.capacity_from + "): the least per device is " +
                     Bytes(static_cast<double>(c.memory.total)) + " with " + c.Label() + " (" +
                     RankMemoryText(c.memory) + "); the largest consumer is " + c.memory.largest +
                     " (" + Bytes(static_cast<double>(c.memory.largest_bytes)) + ")";
  if (m.fit.tried.size() == 1)
    text +=
        "; --optimizer-sharding auto and --recompute auto let the planner try ZeRO and "
        "recomputation";
  return text + "; more devices, a smaller --batch or a larger budget may fit";
}

nlohmann::ordered_json PlanMemoryJson(const PlanMemory& m) {
  const RankMemory& r = m.fit.chosen.memory;
  nlohmann::ordered_json j = {{"per_device_bytes", r.total},
                              {"parameters_bytes", r.parameters},
                              {"gradients_bytes", r.gradients},
                              {"optimizer_states_bytes", r.optimizer_states},
                              {"activations_at_peak_bytes", r.activations},
                              {"initialisation_bytes", r.initialisation},
                              {"peak_at", r.peak_at},
                              {"peak_in_backward", r.peak_in_backward},
                              {"largest_consumer", r.largest},
                              {"largest_consumer_bytes", r.largest_bytes},
                              {"capacity_bytes", m.capacity_bytes},
                              {"capacity_from", m.capacity_from},
                              {"fits", m.fit.fits},
                              {"optimizer_sharding", m.fit.chosen.optimizer_sharding},
                              {"recompute", m.fit.chosen.recompute},
                              {"why", m.fit.why}};
  j["tried"] = nlohmann::ordered_json::array();
  for (const MemoryCandidate& c : m.fit.tried) {
    j["tried"].push_back({{"options", c.Label()},
                          {"per_device_bytes", c.memory.total},
                          {"predicted_step_seconds", c.step_seconds},
                          {"fits", c.fits}});
  }
  return j;
}

void PrintPlanMemory(const PlanMemory& m) {
  const RankMemory& r = m.fit.chosen.memory;
  std::printf("memory per device:   %s (the peak: %s; what `train` checks)\n",
              Bytes(static_cast<double>(r.total)).c_str(), RankMemoryText(r).c_str());
  std::printf("largest consumer:    %s (%s)\n", r.largest.c_str(),
              Bytes(static_cast<double>(r.largest_bytes)).c_str());
  if (m.capacity_bytes > 0) {
    std::printf("memory options:      %s: %s\n", m.fit.chosen.Label().c_str(), m.fit.why.c_str());
    for (const MemoryCandidate& c : m.fit.tried) {
      if (m.fit.tried.size() == 1) break;
      std::printf("  %-36s %10s  %9.3f ms%s\n", c.Label().c_str(),
                  Bytes(static_cast<double>(c.memory.total)).c_str(), c.step_seconds * 1e3,
                  c.fits ? "" : "  (does not fit)");
    }
  }
}

Result<nlohmann::ordered_json> FitTrainMemory(const ModelFile& mf, const Graph& graph,
                                              const SearchFlags& flags, bool print,
                                              PartitionOptions* partition, DistProgram* probe,
                                              const SearchResult* searched) {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      SearchOptions options,
      MakeSearchOptions(flags, SearchMode::kSemiAuto, partition->devices, partition->meshes));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      PlanMemory m, FitPlanMemory(mf, graph, *probe, *partition, options, flags, searched));
  if (!m.fit.fits) return Status::Invalid(NothingFitsMessage(mf, m));
  partition->optimizer_sharding = m.fit.chosen.optimizer_sharding;
  partition->recompute = m.fit.chosen.recompute;
  *probe = std::move(m.fit.program);
  if (print) {
    const RankMemory& r = m.fit.chosen.memory;
    std::printf("memory per device:   %s (planned at %s; %s; %s)\n",
                Bytes(static_cast<double>(r.total)).c_str(), PrecisionName(options.dtype),
                m.fit.chosen.Label().c_str(), RankMemoryText(r).c_str());
    if (m.fit.tried.size() > 1) std::printf("memory options:      %s\n", m.fit.why.c_str());
    std::fflush(stdout);
  }
  return PlanMemoryJson(m);
}

}  // namespace shardscope::cli

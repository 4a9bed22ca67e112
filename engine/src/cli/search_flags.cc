#include "cli/search_flags.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/option_checks.h"
#include "shardscope/cost/cluster.h"
#include "shardscope/memory_fit.h"

namespace shardscope::cli {

namespace {

std::vector<double> BucketChoiceBytes() {
  std::vector<double> bytes;
  for (double mb : SearchFlags::kBucketChoicesMb) bytes.push_back(mb * (1 << 20));
  return bytes;
}

bool RecomputeGiven(const SearchFlags& f) {
  return f.recompute_option != nullptr && f.recompute_option->count() > 0;
}

}  // namespace

bool OptimizerShardingAuto(const SearchFlags& f, const ParallelConfig& parallel) {
  return f.optimizer_sharding == "auto" ||
         (f.optimizer_sharding.empty() && parallel.optimizer_sharding == 0);
}

bool RecomputeAuto(const SearchFlags& f, const ParallelConfig& parallel) {
  if (RecomputeGiven(f)) return f.recompute == std::vector<std::string>{"auto"};
  return parallel.recompute.empty();
}

void ApplyMemoryFlags(const SearchFlags& flags, const ParallelConfig& parallel,
                      PartitionOptions* partition) {
  const std::string& zero = flags.optimizer_sharding;
  partition->optimizer_sharding =
      zero.empty() || zero == "auto" ? parallel.optimizer_sharding : std::stoi(zero);
  if (zero == "auto") partition->optimizer_sharding = 0;
  partition->recompute = parallel.recompute;
  if (RecomputeGiven(flags) && !RecomputeAuto(flags, parallel))  // given alone: every layer
    partition->recompute = {"*"};
  else if (RecomputeGiven(flags))
    partition->recompute = {};
  partition->gradient_bucket_bytes = static_cast<int64_t>(flags.BucketMb() * (1 << 20));
}

void SetSearchMemoryChoices(const ParallelConfig& parallel, SearchFlags* flags) {
  PartitionOptions fixed;
  ApplyMemoryFlags(*flags, parallel, &fixed);
  flags->zero_options = {fixed.optimizer_sharding};
  if (OptimizerShardingAuto(*flags, parallel)) flags->zero_options = {0, 1, 2, 3};
  flags->recompute_options = {fixed.recompute};
  flags->recompute_layers_open = RecomputeAuto(*flags, parallel);
}

void TakeSearchMemoryChoices(const SearchResult& result, const SearchFlags& flags,
                             const ParallelConfig& parallel, PartitionOptions* partition) {
  if (OptimizerShardingAuto(flags, parallel))
    partition->optimizer_sharding = result.optimizer_sharding;
  if (RecomputeAuto(flags, parallel)) partition->recompute = result.recompute;
}

void AddSearchFlags(CLI::App* app, SearchFlags& f) {
  app->add_option("--optimizer-sharding", f.optimizer_sharding,
                  "0 | 1 | 2 | 3 | auto: ZeRO stage over each parameter's replicas (MindSpore's "
                  "optimizer parallel): 0 off, 1 optimizer states sharded (each replica updates "
                  "a 1/dp slice, then the slices are all-gathered), 2 gradients too "
                  "(each reduce-scattered into its slice once backward wrote it, then freed), "
                  "3 parameters too (each whole "
                  "shard gathered before its forward and its backward use, freed after); auto: "
                  "the cheapest stage that fits the device memory. Default: the model file's "
                  "parallel.optimizer_sharding, else auto (docs/memory.md)")
      ->check(CLI::IsMember({"0", "1", "2", "3", "auto"}));
  f.recompute_option =
      app->add_option("--recompute", f.recompute,
                      "Recompute every layer's activations in backward instead of keeping them "
                      "(per scope: parallel.recompute: [layer0, layer1] in the model file); "
                      "--recompute auto: only when the plan does not fit the device memory "
                      "otherwise and recomputing is the cheapest way to fit (the default when "
                      "the model file names no scopes)")
          ->expected(0, 1)
          ->check(CLI::IsMember({"auto"}));
  app->add_option_function<std::string>(
         "--bucket-mb",
         [&f](const std::string& v) {
           f.bucket_auto = v == "auto";
           f.bucket_mb = f.bucket_auto ? -1 : std::strtod(v.c_str(), nullptr);
         },
         "Reduce parameter gradients in buckets of about this many MiB: one all-reduce per "
         "bucket instead of one per gradient, the same sums; 0: one each. auto (the default "
         "on a --cluster profile without gradient_bucket): plan prices its plan with buckets of "
         "25, 50, 100, 200 and 400 MiB and one of every gradient, keeps the cheapest and "
         "saves it with --save-strategy, which train --load-strategy then uses (default "
         "elsewhere: 25). ZeRO 2/3 reduce-scatter in buckets of the same size")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            char* end = nullptr;
            const double mb = std::strtod(v.c_str(), &end);
            if (v == "auto" || (!v.empty() && *end == '\0' && mb >= 0 && mb <= 4096)) return "";
            return "--bucket-mb " + v + ": expected MiB in [0, 4096], or auto";
          },
          "MIB|auto"));
  app->add_option("--search", f.search,
                  "sharding_propagation | recursive_programming | dynamic_programming | "
                  "semi_auto: choose strategies for the operators the model does not configure");
  app->add_option("--save-strategy", f.save_strategy,
                  "Write every operator's strategy, provenance and runners-up to FILE (JSON)");
  app->add_option("--load-strategy", f.load_strategy,
                  "Read strategies from FILE (JSON, as --save-strategy writes, or a MindSpore "
                  "strategy checkpoint in JSON, as --export mindspore writes); they count as "
                  "the user's")
      ->check(CLI::ExistingFile);
  app->add_option("--profile", f.profile,
                  "Cost profile from `shardscope calibrate --out FILE` (default: built-in "
                  "figures)")
      ->check(CLI::ExistingFile);
  app->add_option("--cluster", f.cluster,
                  "NAME|FILE: price for a cluster profile (`shardscope clusters` lists the "
                  "shipped ones): its links per mesh axis (inside a node, across nodes, torus), "
                  "memory and compute at --dtype; the devices laid out as node=N/D,local=D "
                  "unless --device-mesh says otherwise. Not with --profile");
  app->add_option("--dtype", f.dtype,
                  "f32 | bf16 | fp16: the element type every byte figure and the cluster's "
                  "compute rate assume (bf16/fp16: fp32 master weights and optimizer states). "
                  "Planning only: training computes in f32 (default: the model file's "
                  "training.dtype, else f32)");
  app->add_option("--memory-budget", f.memory_budget_mb,
                  "Per-device memory in MB: the search respects it and the planned peak must fit "
                  "it (with --cluster: the smaller of the two; default: none)")
      ->check(AtLeast(0));
  app->add_option("--device-mesh", f.device_mesh,
                  "How the devices are arranged, outer axis first, e.g. node=2,local=4 (two "
                  "hosts of four); ranks are row-major. With --axis-bandwidth the searches price "
                  "a collective at the slowest axis its group spans (default: one axis)");
  app->add_option("--axis-bandwidth", f.axis_bandwidth,
                  "AXIS=BYTES_PER_S, repeatable: the link bandwidth along one axis of "
                  "--device-mesh (by name or index), e.g. node=1.25e9; overrides the profile's "
                  "axis_bandwidth");
  app->add_option("--axis-latency", f.axis_latency,
                  "AXIS=SECONDS, repeatable: the per-message latency along one axis of "
                  "--device-mesh, e.g. node=20e-6; overrides the profile's axis_latency");
}

namespace {

// "AXIS=VALUE" entries of `flag` (AXIS a name or an index of `mesh`) into `out`; values must
// be numbers, positive for bandwidths and non-negative for latencies.
Status ParseAxisValues(const std::string& flag, const std::vector<std::string>& entries,
                       const DeviceMesh& mesh, std::map<std::string, double>* out) {
  const bool bandwidth = flag == "--axis-bandwidth";
  for (const std::string& entry : entries) {
    const std::string what = flag + " " + entry;
    if (mesh.num_axes() == 0)
      return Status::Invalid(what + ": needs --device-mesh (which axes there are)");
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Invalid(
          what + ": expected AXIS=" +
          (bandwidth ? "BYTES_PER_S, e.g. node=1.25e9" : "SECONDS, e.g. node=20e-6"));
    }
    std::string axis = entry.substr(0, eq);
    const std::string number = entry.substr(eq + 1);
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (number.empty() || end == nullptr || *end != '\0' || !(bandwidth ? value > 0 : value >= 0)) {
      return Status::Invalid(what + ": '" + number + "' is not a " +
                             (bandwidth ? "positive number of bytes/s" : "number of seconds >= 0"));
    }
    if (axis.find_first_not_of("0123456789") == std::string::npos) {
      const int index = std::atoi(axis.c_str());
      if (index >= mesh.num_axes())
        return Status::Invalid(what + ": the device mesh " + mesh.ToString() + " has no axis " +
                               axis);
      axis = mesh.axis_name(index);
    } else {
      bool known = false;
      for (int a = 0; a < mesh.num_axes(); ++a) known |= mesh.axis_name(a) == axis;
      if (!known) {
        return Status::Invalid(what + ": the device mesh " + mesh.ToString() + " has no axis '" +
                               axis + "'");
      }
    }
    (*out)[axis] = value;
  }
  return Status::Ok();
}

// --device-mesh, --axis-bandwidth and --axis-latency into `o`.
Status ApplyAxisFlags(const SearchFlags& f, SearchOptions& o) {
  if (!f.device_mesh.empty()) {
    auto mesh = ParseMeshSpec(f.device_mesh);
    if (!mesh.ok()) return mesh.status().WithContext("--device-mesh " + f.device_mesh);
    if (mesh->size() != o.devices) {
      return Status::Invalid("--device-mesh " + f.device_mesh + " has " +
                             std::to_string(mesh->size()) + " devices but the run has " +
                             std::to_string(o.devices));
    }
    o.device_mesh = *mesh;
  }
  SHARDSCOPE_RETURN_IF_ERROR(
      ParseAxisValues("--axis-bandwidth", f.axis_bandwidth, o.device_mesh, &o.cost.axis_bandwidth));
  SHARDSCOPE_RETURN_IF_ERROR(
      ParseAxisValues("--axis-latency", f.axis_latency, o.device_mesh, &o.cost.axis_latency));
  return Status::Ok();
}

}  // namespace

Result<SearchOptions> MakeSearchOptions(const SearchFlags& f, SearchMode mode, int devices,
                                        const std::map<std::string, DeviceMesh>& meshes) {
  SearchOptions o;
  o.mode = mode;
  o.devices = devices;
  o.meshes = meshes;
  o.top_k = f.top_k;
  o.memory_budget_bytes = f.memory_budget_mb * 1e6;
  // The search's estimate leaves out temporaries (about 1 % of a decoder's peak): aiming 3 %
  // under the budget keeps the plan from needing a memory option after the search.
  o.memory_target = 0.97;
  o.optimizer_sharding_options = f.zero_options;
  o.recompute_options = f.recompute_options;
  o.shard_blocks = f.shard_blocks;
  o.optimizer_states = f.optimizer_states;
  o.dtype = f.file_dtype;
  if (!f.dtype.empty()) {
    auto dtype = ParsePrecision(f.dtype);
    if (!dtype.ok()) return dtype.status().WithContext("--dtype");
    o.dtype = *dtype;
  }
  if (!f.profile.empty() && !f.cluster.empty())
    return Status::Invalid("--cluster " + f.cluster + " and --profile " + f.profile +
                           " both say what the hardware costs; give one");
  if (!f.profile.empty()) {
    SHARDSCOPE_ASSIGN_OR_RETURN(o.cost, LoadCostModel(f.profile));
  }
  SHARDSCOPE_RETURN_IF_ERROR(ApplyAxisFlags(f, o));
  if (!f.cluster.empty()) {
    SHARDSCOPE_ASSIGN_OR_RETURN(ClusterProfile cluster, LoadClusterProfile(f.cluster));
    if (cluster.memory_bytes > 0 &&
        (o.memory_budget_bytes <= 0 || cluster.memory_bytes < o.memory_budget_bytes))
      o.memory_budget_bytes = cluster.memory_bytes;
    if (o.device_mesh.num_axes() == 0) {
      auto mesh = ClusterDeviceMesh(cluster, devices);
      if (!mesh.ok()) return mesh.status().WithContext("--cluster " + f.cluster);
      o.device_mesh = *mesh;
    }
    auto cost = ClusterCostModel(cluster, o.device_mesh, o.dtype);
    if (!cost.ok()) return cost.status().WithContext("--cluster " + f.cluster);
    o.cost = *cost;
    // --axis-bandwidth / --axis-latency still override the cluster's figures.
    SHARDSCOPE_RETURN_IF_ERROR(ApplyAxisFlags(f, o));
    if (f.no_overlap) o.cost.overlap_gradients = false;
    const bool own = !cluster.in_process && f.bucket_mb < 0;  // the cluster's buckets
    if (own && (f.bucket_auto || !cluster.gradient_bucket_given)) {
      o.gradient_bucket_choices = BucketChoiceBytes();
      o.cost.gradient_bucket_bytes = o.gradient_bucket_choices[0];
    }
    if (own) return o;
  }
  // Gradients are priced in the buckets `train` reduces them in (in-process profiles, the
  // built-in figures, or --bucket-mb over a cluster's).
  o.cost.gradient_bucket_bytes = f.BucketMb() * (1 << 20);
  if (f.bucket_auto) o.gradient_bucket_choices = BucketChoiceBytes();
  return o;
}

Result<std::optional<SearchResult>> ApplySearchFlags(
    const SearchFlags& f, std::optional<SearchMode> mode, Graph* forward, int devices,
    const std::map<std::string, DeviceMesh>& meshes, bool save, const SearchedPeakFn& peak) {
  if (!f.load_strategy.empty()) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int loaded, LoadStrategyFile(f.load_strategy, forward));
    (void)loaded;
  }
  if (!mode) return std::optional<SearchResult>();
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchOptions o, MakeSearchOptions(f, *mode, devices, meshes));
  const std::vector<std::string> layers = LayerScopes(*forward);
  if (f.recompute_layers_open && !layers.empty()) o.recompute_options = {{}, layers};
  // Only a plan that may recompute is checked, so only then is the unsearched graph kept.
  const bool may_recompute =
      std::any_of(o.recompute_options.begin(), o.recompute_options.end(),
                  [](const std::vector<std::string>& scopes) { return !scopes.empty(); });
  const bool check =
      peak && may_recompute && o.memory_budget_bytes > 0 && *mode != SearchMode::kSemiAuto;
  const Graph unannotated = check ? *forward : Graph();
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult r, SearchStrategies(*forward, o));
  SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(r, forward));
  if (check && r.memory_fits && r.memory_estimate_bytes > 0 && !r.recompute.empty()) {
    // With recomputation the estimate counts a scope's replay but not its backward's
    // temporaries (beyond memory_target's margin): where they break the budget, aim lower.
    SHARDSCOPE_ASSIGN_OR_RETURN(const int64_t real, peak(r));
    if (static_cast<double>(real) > o.memory_budget_bytes) {
      o.memory_target *= r.memory_estimate_bytes / static_cast<double>(real);
      *forward = unannotated;
      SHARDSCOPE_ASSIGN_OR_RETURN(r, SearchStrategies(*forward, o));
      SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(r, forward));
    }
  }
  if (save && !f.save_strategy.empty()) {
    std::ofstream out(f.save_strategy);
    out << SearchResultToJson(r) << "\n";
    if (!out) return Status::Io(f.save_strategy + ": cannot write the strategy file");
  }
  return std::optional<SearchResult>(std::move(r));
}

std::vector<ShardBlockSpec> ShardBlockSpecs(const ParallelConfig& parallel) {
  std::vector<ShardBlockSpec> specs;
  for (const ShardBlockEntry& b : parallel.shard_blocks)
    specs.push_back({b.block, b.in_strategy, b.out_strategy, b.level, b.location.ToString()});
  return specs;
}

Status TakeTrainBucket(SearchFlags* f) {
  if (f->bucket_auto) {
    return Status::Invalid(
        "--bucket-mb auto: train reduces in one bucket size; give it in MiB, or let plan choose "
        "(plan --bucket-mb auto --save-strategy FILE) and train --load-strategy FILE");
  }
  if (f->bucket_mb >= 0) return Status::Ok();
  f->bucket_mb = SearchFlags::kDefaultBucketMb;
  if (f->load_strategy.empty()) return Status::Ok();
  std::ifstream in(f->load_strategy);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_object() && j.contains("gradient_bucket_bytes")) {
    if (!j["gradient_bucket_bytes"].is_number() || j["gradient_bucket_bytes"].get<double>() < 0)
      return Status::Invalid(f->load_strategy +
                             ": gradient_bucket_bytes must be a number of bytes >= 0");
    f->bucket_mb = j["gradient_bucket_bytes"].get<double>() / (1 << 20);
  }
  return Status::Ok();
}

Result<std::optional<SearchMode>> TrainSearchMode(const SearchFlags& f,
                                                  const std::string& file_mode,
                                                  const std::string& file_search) {
  std::string name = f.search;
  if (name.empty() && (file_mode == "auto" || file_mode == "auto_parallel"))
    name = file_search.empty() ? "sharding_propagation" : file_search;
  if (name.empty() && !f.load_strategy.empty()) name = "semi_auto";
  if (name.empty()) return std::optional<SearchMode>();
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchMode mode, ParseSearchMode(name));
  return std::optional<SearchMode>(mode);
}

}  // namespace shardscope::cli

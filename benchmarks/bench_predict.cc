// Predicted against measured step time (issue 7), broken down: for each sample model file on
// N in-process devices, the search's prediction (SearchResult: computation, communication,
// collectives per step) next to what a training step measures (per-rank kernel time,
// communication time, communicator calls per step, and each redistribution timed alone).
//
//   cmake --build build -j2 --target bench_predict
//   build/bin/bench_predict [--profile=FILE] [--devices=8] [--steps=40] [MODEL.yaml ...]
//   (default models: samples/models/{ffn,network3,matmul_relu,lenet5}.yaml; run from the
//   repository root)
//
// Plain tables, no Google Benchmark: the quantities compared are figures of one training
// step, not of a loop of identical calls. Strategies are chosen as `shardscope plan` chooses
// them (the file's search mode, else semi_auto); data are synthetic (timing only).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/cost_model.h"
#include "shardscope/data.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/model_file.h"
#include "shardscope/redistribution.h"
#include "shardscope/search.h"

namespace {

using namespace shardscope;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  std::string profile;
  int devices = 8;
  int steps = 40;
  std::vector<std::string> models;
};

// One sample's figures.
struct Row {
  std::string name;
  SearchResult predicted;
  double step_ms = 0;              // rank 0, median over the timed steps, between barriers
  double compute_ms = 0;           // mean over ranks of kernel (and optimizer) time per step
  double comm_ms = 0;              // mean over ranks of redistribution time per step
  double calls = 0;                // communicator calls per step, rank 0
  int redistributions = 0;         // instructions per step
  int communicating_steps = 0;     // their steps that move data
  double alone_ms = 0;             // every redistribution timed alone, summed
  std::vector<std::string> alone;  // per redistribution: "value kind.. measured us"
  std::string error;
};

Result<ModelGraph> Searched(const ModelFile& mf, int devices, const CostModel& cost,
                            SearchResult* result, PartitionOptions* partition) {
  const ParallelConfig& parallel = mf.parallel();
  std::string mode_name = parallel.search;
  if (mode_name.empty()) mode_name = parallel.mode == "auto" ? "sharding_propagation" : "semi_auto";
  SHARDSCOPE_ASSIGN_OR_RETURN(SearchMode mode, ParseSearchMode(mode_name));
  partition->devices = devices;
  partition->cost = cost;
  for (const auto& [name, text] : parallel.meshes) {
    SHARDSCOPE_ASSIGN_OR_RETURN(partition->meshes[name], ParseMeshExpr(text));
  }
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, mf.Build(mf.training().batch));
  SearchOptions o;
  o.mode = mode;
  o.devices = devices;
  o.cost = cost;
  o.meshes = partition->meshes;
  for (const ShardBlockEntry& b : parallel.shard_blocks)
    o.shard_blocks.push_back({b.block, b.in_strategy, b.out_strategy, b.level});
  SHARDSCOPE_ASSIGN_OR_RETURN(*result, SearchStrategies(model.graph, o));
  SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(*result, &model.graph));
  return model;
}

Status Measure(const ModelFile& mf, const Options& opt, const CostModel& cost, Row* row) {
  PartitionOptions partition;
  const Dataset data =
      MakeSyntheticDataset(mf.training().batch, mf.example_shape(), mf.num_classes(), /*seed=*/7);
  std::vector<double> compute(opt.devices), comm(opt.devices);
  std::vector<double> steps;
  std::map<int, std::vector<double>> alone;  // instruction -> rank 0 seconds
  Status st = RunOnDevices(opt.devices, [&](Communicator& world) -> Status {
    SearchResult r;
    PartitionOptions p;
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, Searched(mf, opt.devices, cost, &r, &p));
    TrainConfig config{mf.training().seed, mf.training().optimizer};
    SHARDSCOPE_ASSIGN_OR_RETURN(auto trainer,
                                DistTrainer::Create(std::move(model), config, p, world.rank()));
    for (int i = 0; i < 3; ++i) {  // warm-up: split communicators, first-touch buffers
      SHARDSCOPE_RETURN_IF_ERROR(trainer->Step(world, data.images, data.labels).status());
    }
    const RankStats before = trainer->stats();
    const int64_t calls_before = world.stats().calls;
    for (int i = 0; i < opt.steps; ++i) {
      SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
      const auto t = Clock::now();
      SHARDSCOPE_RETURN_IF_ERROR(trainer->Step(world, data.images, data.labels).status());
      SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
      if (world.rank() == 0) steps.push_back(Since(t));
    }
    const RankStats& after = trainer->stats();
    compute[world.rank()] = (after.compute_seconds - before.compute_seconds) / opt.steps;
    comm[world.rank()] = (after.comm_seconds - before.comm_seconds) / opt.steps;
    // The barriers above are calls too: 2 per step.
    if (world.rank() == 0) {
      row->calls = static_cast<double>(world.stats().calls - calls_before) / opt.steps - 2;
      row->predicted = r;
    }
    // Each redistribution alone, all ranks together, between barriers.
    const DistProgram& program = trainer->program();
    RedistWorkspace workspace;
    for (size_t i = 0; i < program.instrs.size(); ++i) {
      const DistInstr& in = program.instrs[i];
      if (in.kind != DistInstr::Kind::kRedistribute) continue;
      Tensor from = trainer->executor().local(in.inputs[0]);
      Tensor to = trainer->executor().local(in.outputs[0]);
      for (int k = 0; k < 12; ++k) {
        SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
        const auto t = Clock::now();
        SHARDSCOPE_RETURN_IF_ERROR(ExecuteRedistribution(*in.plan, world, from, &to, &workspace));
        if (world.rank() == 0 && k >= 2) alone[static_cast<int>(i)].push_back(Since(t));
      }
      if (world.rank() != 0) continue;
      std::string kinds;
      for (const RedistStep& s : in.plan->steps) {
        if (!kinds.empty()) kinds += "+";
        kinds += RedistStepKindName(s.kind);
      }
      row->alone.push_back(program.values[in.inputs[0]].name + " (" + kinds + ")");
    }
    if (world.rank() == 0) {
      row->redistributions = program.NumRedistributions();
      for (const DistInstr& in : program.instrs) {
        if (in.kind != DistInstr::Kind::kRedistribute) continue;
        for (const RedistStep& s : in.plan->steps)
          row->communicating_steps +=
              s.kind != RedistStep::Kind::kLocalSlice && s.kind != RedistStep::Kind::kLocalReshape;
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  row->step_ms = Median(steps) * 1e3;
  for (int r = 0; r < opt.devices; ++r) {
    row->compute_ms += compute[r] * 1e3 / opt.devices;
    row->comm_ms += comm[r] * 1e3 / opt.devices;
  }
  size_t k = 0;
  for (auto& [instr, times] : alone) {
    const double us = Median(times) * 1e6;
    row->alone_ms += us / 1e3;
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.1f us", us);
    row->alone[k++] += buf;
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--profile=", 0) == 0) {
      opt.profile = a.substr(10);
    } else if (a.rfind("--devices=", 0) == 0) {
      opt.devices = std::max(2, std::atoi(a.c_str() + 10));
    } else if (a.rfind("--steps=", 0) == 0) {
      opt.steps = std::max(1, std::atoi(a.c_str() + 8));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_predict [--profile=FILE] [--devices=8] [--steps=40] [MODEL ...]\n");
      return 0;
    } else {
      opt.models.push_back(a);
    }
  }
  if (opt.models.empty()) {
    for (const char* m : {"ffn", "network3", "matmul_relu", "lenet5"})
      opt.models.push_back(std::string("samples/models/") + m + ".yaml");
  }
  CostModel cost;
  if (!opt.profile.empty()) {
    auto loaded = LoadCostModel(opt.profile);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
      return 2;
    }
    cost = *loaded;
  }
  std::printf("cost model: %s\n%d in-process devices, %d timed steps per sample\n\n",
              cost.ToString().c_str(), opt.devices, opt.steps);
  std::vector<Row> rows;
  for (const std::string& path : opt.models) {
    Row row;
    auto mf = LoadModelFile(path);
    if (!mf.ok()) {
      std::fprintf(stderr, "%s\n", mf.status().message().c_str());
      return 2;
    }
    row.name = mf->name();
    if (Status st = Measure(*mf, opt, cost, &row); !st.ok()) row.error = st.message();
    rows.push_back(std::move(row));
  }
  std::printf(
      "| sample | predicted ms | measured ms | ratio | pred. compute ms | meas. compute ms | "
      "pred. comm ms | meas. comm ms | pred. collectives | program comm. steps | calls/step | "
      "redistributions alone ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("| %s | error: %s |\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    const SearchResult& p = r.predicted;
    std::printf(
        "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %d | %.0f | %.2f |\n",
        r.name.c_str(), p.step_seconds * 1e3, r.step_ms, r.step_ms / (p.step_seconds * 1e3),
        p.operator_seconds * 1e3, r.compute_ms, (p.step_seconds - p.operator_seconds) * 1e3,
        r.comm_ms, p.collectives, r.communicating_steps, r.calls, r.alone_ms);
  }
  for (const Row& r : rows) {
    std::printf("\n%s: each redistribution alone (rank 0, median of 10)\n", r.name.c_str());
    for (const std::string& s : r.alone) std::printf("  %s\n", s.c_str());
  }
  return 0;
}

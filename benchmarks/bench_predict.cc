// Predicted against measured step time (issue 7), broken down: for each sample model file on
// N in-process devices, the prediction (the partitioned program priced, PriceProgram:
// computation, communication, its communication steps; the search's objective beside it) next to
// what a training step measures (per-rank kernel time, communication time, communicator calls per
// step, and each redistribution timed alone), then the kernels alone: one device's share of the
// step (the model at batch / N) run by the single-device Executor with per-operator timing, against
// the search's computation price for it, per operator kind (calls, mean time per call: the
// per-operator overhead of small operators shows there).
//
//   cmake --build build -j2 --target bench_predict
//   build/bin/bench_predict [--profile=FILE] [--devices=8] [--steps=40] [MODEL.yaml ...]
//   build/bin/bench_predict --concurrency [--devices=8] [MODEL.yaml ...]   (N device threads
//   computing at once against one thread, by kind of kernel: the compute slots each kind sees)
//   build/bin/bench_predict --phases [--profile=FILE] [--devices=8]   (a collective's hand-off
//   by the length of the compute phase before it: long_phase_handoff_s's curve)
//   (default models: samples/models/{ffn,network3,matmul_relu,lenet5}.yaml; run from the
//   repository root)
//
// Plain tables, no Google Benchmark: the quantities compared are figures of one training
// step, not of a loop of identical calls. Strategies are chosen as `shardscope plan` chooses
// them (the file's search mode, else semi_auto); data are synthetic (timing only).
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ops/op_registry.h"  // the MatMul kernel itself, for the rate-by-shape table
#include "shardscope/autodiff.h"
#include "shardscope/communicator.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/data.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/executor.h"
#include "shardscope/model_file.h"
#include "shardscope/program_price.h"
#include "shardscope/redistribution/redistribution.h"
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
  bool concurrency = false;
  bool phases = false;
  bool chains = false;
  std::vector<std::string> models;
};

// One sample's figures.
struct Row {
  std::string name;
  SearchResult predicted;       // the search's objective
  ProgramPrice program;         // the prediction: the partitioned program priced (program_price.h)
  double step_ms = 0;           // rank 0, median over the timed steps, between barriers
  double compute_ms = 0;        // mean over ranks of kernel (and optimizer) time per step
  double comm_ms = 0;           // mean over ranks of redistribution time per step
  double calls = 0;             // communicator calls per step, rank 0
  int redistributions = 0;      // instructions per step
  int communicating_steps = 0;  // their steps that move data
  std::map<int64_t, int> steps_by_group;  // group size -> communicating steps (irregular: all)
  double steps_back_to_back_ms = 0;       // rank 0: the timed steps again without barriers, mean
  double chains_back_to_back_ms = 0;      // rank 0: the chain 50 times without barriers, mean
  double chain_ms = 0;                    // every redistribution back to back, rank 0, median
  double alone_ms = 0;                    // every redistribution timed alone, summed
  std::vector<std::string> alone;         // per redistribution: "value kind.. measured us"
  std::string error;
};

Result<ModelGraph> Searched(const ModelFile& mf, int devices, const CostModel& cost,
                            SearchResult* result, PartitionOptions* partition,
                            SearchOptions* search) {
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
    o.shard_blocks.push_back({b.block, b.in_strategy, b.out_strategy, b.level, ""});
  SHARDSCOPE_ASSIGN_OR_RETURN(*result, SearchStrategies(model.graph, o));
  *search = o;
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
  std::vector<std::vector<double>> chained(opt.devices, std::vector<double>(256));  // rank, redist
  std::vector<double> chain;  // rank 0: every redistribution back to back
  Status st = RunOnDevices(opt.devices, [&](Communicator& world) -> Status {
    SearchResult r;
    PartitionOptions p;
    SearchOptions search;
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph model, Searched(mf, opt.devices, cost, &r, &p, &search));
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
      SHARDSCOPE_ASSIGN_OR_RETURN(row->program,
                                  PriceProgram(trainer->graph(), trainer->program(), search));
    }
    // The same steps back to back, as train runs them (no barrier between steps).
    SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
    const auto back_to_back = Clock::now();
    for (int i = 0; i < opt.steps; ++i)
      SHARDSCOPE_RETURN_IF_ERROR(trainer->Step(world, data.images, data.labels).status());
    if (world.rank() == 0) row->steps_back_to_back_ms = Since(back_to_back) / opt.steps * 1e3;
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
    // Every redistribution in program order, back to back without kernels (the step's
    // communication alone): per redistribution the time from the end of the one before, per
    // chain rank 0's clock from a barrier.
    std::vector<size_t> redists;
    for (size_t i = 0; i < program.instrs.size(); ++i) {
      if (program.instrs[i].kind == DistInstr::Kind::kRedistribute) redists.push_back(i);
    }
    std::vector<Tensor> froms, tos;
    for (size_t i : redists) {
      froms.push_back(trainer->executor().local(program.instrs[i].inputs[0]));
      tos.push_back(trainer->executor().local(program.instrs[i].outputs[0]));
    }
    const auto chain_once = [&](double* seconds) -> Status {
      auto t = Clock::now();
      for (size_t j = 0; j < redists.size(); ++j) {
        SHARDSCOPE_RETURN_IF_ERROR(ExecuteRedistribution(*program.instrs[redists[j]].plan, world,
                                                         froms[j], &tos[j], &workspace));
        if (seconds != nullptr) seconds[j] += Since(t) / 50;
        t = Clock::now();
      }
      return Status::Ok();
    };
    for (int k = 0; k < 52; ++k) {
      SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
      const auto start = Clock::now();
      SHARDSCOPE_RETURN_IF_ERROR(chain_once(k >= 2 ? chained[world.rank()].data() : nullptr));
      if (world.rank() == 0 && k >= 2) chain.push_back(Since(start));
    }
    // The same without barriers between the chains: the step's communication as train runs it.
    SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
    const auto chains_start = Clock::now();
    for (int k = 0; k < 50; ++k) SHARDSCOPE_RETURN_IF_ERROR(chain_once(nullptr));
    if (world.rank() == 0) row->chains_back_to_back_ms = Since(chains_start) / 50 * 1e3;
    if (world.rank() == 0) {
      row->redistributions = program.NumRedistributions();
      for (const DistInstr& in : program.instrs) {
        if (in.kind != DistInstr::Kind::kRedistribute) continue;
        for (const RedistStep& s : in.plan->steps) {
          if (!CommunicatesData(s)) continue;
          ++row->communicating_steps;
          // Irregular steps run on every device (one AllToAllV): counted as the whole group.
          ++row->steps_by_group[s.irregular() ? opt.devices : in.plan->mesh.GroupSize(s.axes)];
        }
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
  row->chain_ms = Median(chain) * 1e3;
  size_t k = 0;
  for (auto& [instr, times] : alone) {
    const double us = Median(times) * 1e6;
    row->alone_ms += us / 1e3;
    double in_chain = 0;
    for (int r = 0; r < opt.devices; ++r) in_chain += chained[r][k] / opt.devices;
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.1f us, in the chain %.1f us", us, in_chain * 1e6);
    row->alone[k++] += buf;
  }
  return Status::Ok();
}

// One device's share of a data-parallel step (the model at batch / devices).
int64_t ShareBatch(const ModelFile& mf, const Options& opt) {
  return std::max<int64_t>(1, mf.training().batch / opt.devices);
}

// An Executor over one device's share of forward and backward, synthetic data in place, run
// once (buffers allocated); `schedule` is every kernel of the step.
struct ShareRun {
  ModelGraph model;
  std::unique_ptr<Executor> executor;
  std::vector<NodeId> schedule;
};

Result<std::unique_ptr<ShareRun>> MakeShareRun(const ModelFile& mf, const Options& opt) {
  const int64_t batch = ShareBatch(mf, opt);
  auto run = std::make_unique<ShareRun>();
  SHARDSCOPE_ASSIGN_OR_RETURN(run->model, mf.Build(batch));
  const std::vector<ValueId> params = run->model.graph.Parameters();
  SHARDSCOPE_ASSIGN_OR_RETURN(Gradients grads,
                              BuildBackward(run->model.graph, run->model.loss, params));
  std::vector<ValueId> targets = {run->model.loss};
  for (ValueId g : grads.grads) {
    if (g != kNoValue) targets.push_back(g);
  }
  run->executor = std::make_unique<Executor>(run->model.graph);
  run->executor->InitializeParameters(1);
  const Dataset data = MakeSyntheticDataset(batch, mf.example_shape(), mf.num_classes(), 7);
  run->executor->value(run->model.input) = data.images;
  run->executor->value(run->model.labels) = data.labels;
  run->schedule = run->executor->Schedule(targets);
  run->executor->Run(run->schedule, 0, true);
  return run;
}

// Every kernel of forward and backward of one device's share timed by the Executor, against
// the search's price of the same computation on one device (no optimizer: the Executor does
// not run it).
void PrintKernels(const ModelFile& mf, const Options& opt, const CostModel& cost) {
  const int64_t batch = ShareBatch(mf, opt);
  auto model = mf.Build(batch);
  if (!model.ok()) {
    std::printf("\n%s: %s\n", mf.name().c_str(), model.status().message().c_str());
    return;
  }
  // One device: the file's strategies (for N devices) do not apply.
  for (const Node& n : model->graph.nodes())
    model->graph.mutable_node(n.id).annotations = OpAnnotations{};
  SearchOptions o;
  o.mode = SearchMode::kSemiAuto;
  o.devices = 1;
  o.cost = cost;
  o.cost.in_process.compute_slots = 0;
  o.optimizer_states = 0;
  auto predicted = SearchStrategies(model->graph, o);
  const std::vector<ValueId> params = model->graph.Parameters();
  double parameter_bytes = 0;
  for (ValueId p : params) parameter_bytes += 4.0 * NumElements(model->graph.value(p).shape);
  auto grads = BuildBackward(model->graph, model->loss, params);
  if (!predicted.ok() || !grads.ok()) {
    std::printf("\n%s: %s\n", mf.name().c_str(),
                (predicted.ok() ? grads.status() : predicted.status()).message().c_str());
    return;
  }
  std::vector<ValueId> targets = {model->loss};
  for (ValueId g : grads->grads) {
    if (g != kNoValue) targets.push_back(g);
  }
  Executor ex(model->graph);
  ex.InitializeParameters(1);
  const Dataset data = MakeSyntheticDataset(batch, mf.example_shape(), mf.num_classes(), 7);
  ex.value(model->input) = data.images;
  ex.value(model->labels) = data.labels;
  const auto schedule = ex.Schedule(targets);
  for (int i = 0; i < 5; ++i) ex.Run(schedule, i, true);
  ex.set_profiling(true);
  const int runs = 50;
  for (int i = 0; i < runs; ++i) ex.Run(schedule, i, true);
  std::map<std::string, std::pair<int, double>> by_kind;  // calls per step, seconds per step
  double total = 0;
  for (NodeId n : schedule) {
    const OpTiming& t = ex.timings()[n];
    if (t.runs == 0) continue;
    auto& [calls, secs] = by_kind[OpName(model->graph.node(n).op)];
    ++calls;
    secs += t.seconds / runs;
    total += t.seconds / runs;
  }
  // The search's price without the optimizer's update (optimizer_states 0 still counts
  // reading the weight and the gradient and writing the weight).
  const double price = predicted->operator_seconds - cost.MemorySeconds(3 * parameter_bytes);
  std::printf(
      "\n%s, batch %lld (one device's share of %d): kernels %.3f ms measured, "
      "%.3f ms priced (ratio %.2f), %zu kernels per step\n",
      mf.name().c_str(), static_cast<long long>(batch), opt.devices, total * 1e3, price * 1e3,
      total / price, schedule.size());
  std::printf("  %-32s %6s %12s %14s\n", "operator kind", "calls", "us per step", "us per call");
  for (const auto& [kind, v] : by_kind) {
    std::printf("  %-32s %6d %12.2f %14.2f\n", kind.c_str(), v.first, v.second * 1e6,
                v.second * 1e6 / v.first);
  }
}

// --concurrency: how many of N device threads compute at once, by kind of work. Each thread
// runs one device's share of the model's kernels (its own Executor and buffers; a group of
// kinds alone or all of them) `reps` times; N threads together against one thread alone,
// in units of one thread: N x t(1) / t(N). Beside it, calibrate's compute-slot GEMM (192^3,
// operands filled before timing). 7 rounds, alternating; the median and the range.
double WallOfThreads(int threads, const std::function<void(int)>& work) {
  const auto t = Clock::now();
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) workers.emplace_back(work, i);
  for (std::thread& w : workers) w.join();
  return Since(t);
}

// N x t(1) / t(N) for `work(thread)`, one figure per round.
std::vector<double> SlotsOf(int threads, int rounds, const std::function<void(int)>& work) {
  std::vector<double> slots;
  for (int r = 0; r < rounds; ++r) {
    const double one = WallOfThreads(1, work);
    slots.push_back(threads * one / WallOfThreads(threads, work));
  }
  return slots;
}

std::string MedianAndRange(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f (%.2f–%.2f)", v[v.size() / 2], v.front(), v.back());
  return buf;
}

void PrintConcurrency(const ModelFile& mf, const Options& opt) {
  const std::vector<std::pair<const char*, std::set<OpKind>>> groups = {
      {"every kernel", {}},
      {"Conv2D and its gradients",
       {OpKind::kConv2D, OpKind::kConv2DBackpropFilter, OpKind::kConv2DBackpropInput}},
      {"MaxPool2D and its gradient", {OpKind::kMaxPool2D, OpKind::kMaxPool2DGrad}},
      {"MatMul", {OpKind::kMatMul}},
  };
  std::printf("\n%s, batch %lld per thread: %d threads against one (7 rounds: median, range)\n",
              mf.name().c_str(), static_cast<long long>(ShareBatch(mf, opt)), opt.devices);
  std::vector<std::unique_ptr<ShareRun>> runs;
  for (int t = 0; t < opt.devices; ++t) {
    auto run = MakeShareRun(mf, opt);
    if (!run.ok()) {
      std::printf("  %s\n", run.status().message().c_str());
      return;
    }
    runs.push_back(std::move(*run));
  }
  for (const auto& [name, kinds] : groups) {
    std::vector<std::vector<NodeId>> schedules;
    for (const auto& run : runs) {
      std::vector<NodeId> s;
      for (NodeId n : run->schedule) {
        if (kinds.empty() || kinds.count(run->model.graph.node(n).op)) s.push_back(n);
      }
      schedules.push_back(std::move(s));
    }
    if (schedules[0].empty()) continue;
    const auto start = Clock::now();
    runs[0]->executor->Run(schedules[0], 0, true);
    const double once = Since(start);
    const int reps = static_cast<int>(std::clamp(0.05 / std::max(once, 1e-7), 1.0, 5000.0));
    const auto work = [&](int t) {
      for (int i = 0; i < reps; ++i) runs[t]->executor->Run(schedules[t], i, true);
    };
    std::printf("  %-28s %-20s one thread %.1f us per step\n", name,
                MedianAndRange(SlotsOf(opt.devices, 7, work)).c_str(), once * 1e6);
  }
  const int s = 192, gemms = 40;
  std::vector<Eigen::MatrixXf> a(opt.devices), b(opt.devices), c(opt.devices);
  for (int t = 0; t < opt.devices; ++t) {
    a[t] = Eigen::MatrixXf::Random(s, s);
    b[t] = Eigen::MatrixXf::Random(s, s);
    c[t].resize(s, s);
  }
  const auto gemm = [&](int t) {
    for (int i = 0; i < gemms; ++i) c[t].noalias() = a[t] * b[t];
  };
  std::printf("  %-28s %s\n", "calibrate's GEMM (192^3)",
              MedianAndRange(SlotsOf(opt.devices, 7, gemm)).c_str());
}

// --phases: what a collective costs on top when the device threads arrive from a phase of
// computation, by the phase's length (calibrate's hand-off method, swept): k phases of one
// s^3 GEMM on every device each followed by a 4-byte all-reduce, against the k GEMMs followed
// by one all-reduce; the difference per collective, less a 4-byte all-reduce after a barrier
// (the group sync). Median of 15 rounds, rank 0's clock.
void PrintPhases(const Options& opt, const CostModel& cost) {
  const int k = 6;
  std::printf(
      "%d devices; phase priced = %d x one GEMM at %.1f GFLOP/s / %.2f slots\n"
      "| GEMM per device | phase priced | hand-off after it |\n|---|---:|---:|\n",
      opt.devices, opt.devices, cost.flops / 1e9, cost.in_process.compute_slots);
  for (int s : {64, 96, 128, 192, 256}) {
    std::vector<double> extra, sync;
    const Status st = RunOnDevices(opt.devices, [&](Communicator& world) -> Status {
      Eigen::MatrixXf a = Eigen::MatrixXf::Random(s, s), b = Eigen::MatrixXf::Random(s, s), c(s, s);
      std::vector<float> one(1, 1.0f), out(1);
      const auto gemm = [&] {
        c.noalias() = a * b;
        a(0, 0) = c(0, 0) * 1e-6f;  // a data dependency: no GEMM can be skipped
      };
      for (int r = 0; r < 15; ++r) {
        SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
        auto t = Clock::now();
        for (int i = 0; i < k; ++i) {
          gemm();
          SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(one, out));
        }
        const double each = Since(t);
        SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
        t = Clock::now();
        for (int i = 0; i < k; ++i) gemm();
        SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(one, out));
        const double once = Since(t);
        SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
        t = Clock::now();
        SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(one, out));
        if (world.rank() == 0) {
          sync.push_back(Since(t));
          extra.push_back((each - once) / (k - 1));
        }
      }
      return Status::Ok();
    });
    if (!st.ok()) {
      std::printf("%s\n", st.message().c_str());
      return;
    }
    const double slowdown = cost.in_process.ComputeSlowdown(opt.devices);
    std::printf("| %d³ | %.0f us | %.0f us |\n", s, 2.0 * s * s * s / cost.flops * slowdown * 1e6,
                std::max(0.0, Median(extra) - Median(sync)) * 1e6);
  }
}

// --chains: what one 4-byte collective costs inside a chain of them, by the sequence of groups
// the chain runs on (8 devices: pairs along a = rank / 2, pairs along b = rank % 4, groups of
// 4 = rank / 4, every device; V = a 4-byte AllToAllV on every device, as an irregular step).
// Each round times 24 collectives back to back after a barrier; per collective the median of
// 15 rounds, rank 0's clock.
void PrintChains(const Options& opt) {
  const int n = opt.devices, k = 24, rounds = 15;
  const std::vector<std::pair<const char*, const char*>> chains = {
      {"W", "every device, repeated"},       {"V", "AllToAllV on every device, repeated"},
      {"P", "pairs along a, repeated"},      {"Q", "groups of 4, repeated"},
      {"PW", "pairs along a, every device"}, {"PB", "pairs along a, pairs along b"},
      {"QP", "groups of 4, pairs along a"},  {"QW", "groups of 4, every device"},
      {"QV", "groups of 4, AllToAllV"},      {"QQVV", "matmul_relu's chain"},
  };
  std::map<std::string, std::vector<double>> per;
  const Status st = RunOnDevices(n, [&](Communicator& world) -> Status {
    const int r = world.rank();
    SHARDSCOPE_ASSIGN_OR_RETURN(auto pa, world.Split(r / 2, r));
    SHARDSCOPE_ASSIGN_OR_RETURN(auto pb, world.Split(r % (n / 2), r));
    SHARDSCOPE_ASSIGN_OR_RETURN(auto q, world.Split(r / 4, r));
    std::vector<float> one(1, 1.0f), out(1), all(n, 1.0f), got(n);
    std::vector<int64_t> counts(n, 1), displs(n);
    for (int i = 0; i < n; ++i) displs[i] = i;
    const auto run = [&](char c) -> Status {
      switch (c) {
        case 'W':
          return world.AllReduce(one, out);
        case 'V':
          return world.AllToAllV(all, counts, displs, got, counts, displs);
        case 'P':
          return pa->AllReduce(one, out);
        case 'B':
          return pb->AllReduce(one, out);
        default:
          return q->AllReduce(one, out);
      }
    };
    for (int round = 0; round < rounds; ++round) {
      for (const auto& [seq, what] : chains) {
        const std::string s = seq;
        SHARDSCOPE_RETURN_IF_ERROR(world.Barrier());
        const auto t = Clock::now();
        for (int i = 0; i < k; ++i) SHARDSCOPE_RETURN_IF_ERROR(run(s[i % s.size()]));
        const double secs = Since(t);
        if (r == 0) per[s].push_back(secs / k);
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) {
    std::printf("%s\n", st.message().c_str());
    return;
  }
  std::printf("%d devices: one 4-byte collective inside a chain of %d (median of %d rounds)\n", n,
              k, rounds);
  std::printf("| chain | groups | us per collective | range |\n|---|---|---:|---|\n");
  for (const auto& [seq, what] : chains) {
    std::vector<double> v = per[seq];
    std::sort(v.begin(), v.end());
    std::printf("| %s | %s | %.1f | %.1f–%.1f |\n", seq, what, v[v.size() / 2] * 1e6,
                v.front() * 1e6, v.back() * 1e6);
  }
}

// The engine's MatMul kernel at out[m, n] = a[m, k] · b[k, n] (transposed operands as the
// backward runs them: `ta` for dW = Xᵀ dY, `tb` for dX = dY Wᵀ): GFLOP/s, the best of
// enough calls to take ~20 ms.
double MatMulGflops(int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  Tensor a(ta ? Shape{k, m} : Shape{m, k}), b(tb ? Shape{n, k} : Shape{k, n}), c(Shape{m, n});
  for (int64_t i = 0; i < a.size(); ++i) a.data()[i] = 0.001f * static_cast<float>(i % 97);
  for (int64_t i = 0; i < b.size(); ++i) b.data()[i] = 0.002f * static_cast<float>(i % 89);
  OpAttrs attrs;
  attrs.transpose_a = ta;
  attrs.transpose_b = tb;
  const Tensor* in[] = {&a, &b};
  Tensor* out[] = {&c};
  const KernelContext ctx{attrs, in, out};
  const KernelFn kernel = GetOpDef(OpKind::kMatMul).forward;
  const double flop = 2.0 * m * k * n;
  const int calls = static_cast<int>(std::clamp(2e7 / flop, 1.0, 2000.0));
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    const auto t = Clock::now();
    for (int i = 0; i < calls; ++i) kernel(ctx);
    best = std::min(best, Since(t) / calls);
  }
  return flop / best / 1e9;
}

// The MatMul kernel's rate against its shape (issue 7: small GEMMs are less efficient).
void PrintGemmTable() {
  std::printf(
      "MatMul kernel GFLOP/s by shape (one thread; best of 5), forward / dX (b "
      "transposed) / dW (a transposed)\n");
  std::printf(
      "| m | k=n=64 | k=n=256 | k=n=1024 | k=64,n=1024 | k=1024,n=64 "
      "|\n|---:|---|---|---|---|---|\n");
  for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 256}) {
    std::printf("| %lld |", static_cast<long long>(m));
    for (auto [k, n] :
         {std::pair<int64_t, int64_t>{64, 64}, {256, 256}, {1024, 1024}, {64, 1024}, {1024, 64}}) {
      std::printf(" %.1f / %.1f / %.1f |", MatMulGflops(m, k, n, false, false),
                  MatMulGflops(m, k, n, false, true), MatMulGflops(k, m, n, true, false));
    }
    std::printf("\n");
  }
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
    } else if (a == "--phases") {
      opt.phases = true;
    } else if (a == "--chains") {
      opt.chains = true;
    } else if (a == "--concurrency") {
      opt.concurrency = true;
    } else if (a == "--gemm-table") {
      PrintGemmTable();
      return 0;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bench_predict [--profile=FILE] [--devices=8] [--steps=40] [MODEL ...]\n"
          "       bench_predict --gemm-table   (the MatMul kernel's rate by shape)\n"
          "       bench_predict --concurrency [--devices=8] [MODEL ...]   (N device threads\n"
          "         computing at once against one, by kind of kernel)\n"
          "       bench_predict --phases [--profile=FILE] [--devices=8]   (a collective's\n"
          "         hand-off by the length of the compute phase before it)\n");
      return 0;
    } else {
      opt.models.push_back(a);
    }
  }
  if (opt.models.empty()) {
    for (const char* m : {"ffn", "network3", "matmul_relu", "lenet5"})
      opt.models.push_back(std::string("samples/models/") + m + ".yaml");
  }
  if (opt.chains) {
    PrintChains(opt);
    return 0;
  }
  if (opt.concurrency) {
    for (const std::string& path : opt.models) {
      auto mf = LoadModelFile(path);
      if (!mf.ok()) {
        std::fprintf(stderr, "%s\n", mf.status().message().c_str());
        return 2;
      }
      PrintConcurrency(*mf, opt);
    }
    return 0;
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
  if (opt.phases) {
    PrintPhases(opt, cost);
    return 0;
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
      "pred. comm ms | meas. comm ms | search objective ms (collectives) | program comm. steps "
      "| calls/step | redistributions alone ms |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("| %s | error: %s |\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    const ProgramPrice& p = r.program;
    std::printf(
        "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f (%.1f) | %d | %.0f | %.2f "
        "|\n",
        r.name.c_str(), p.step_seconds * 1e3, r.step_ms, r.step_ms / (p.step_seconds * 1e3),
        p.operator_seconds * 1e3, r.compute_ms, p.communication_seconds * 1e3, r.comm_ms,
        r.predicted.step_seconds * 1e3, r.predicted.collectives, p.communication_steps, r.calls,
        r.alone_ms);
  }
  for (const Row& r : rows) {
    std::printf(
        "\n%s: the redistributions back to back %.3f ms (rank 0, median of 50), without a "
        "barrier between chains %.3f ms; the steps without barriers %.3f ms\n",
        r.name.c_str(), r.chain_ms, r.chains_back_to_back_ms, r.steps_back_to_back_ms);
    std::printf("%s: communicating steps by group size:", r.name.c_str());
    for (const auto& [size, count] : r.steps_by_group)
      std::printf(" %lld: %d", static_cast<long long>(size), count);
    std::printf(
        "\n%s: each redistribution alone (rank 0, median of 10), in the chain (mean of ranks and "
        "50 chains)\n",
        r.name.c_str());
    for (const std::string& s : r.alone) std::printf("  %s\n", s.c_str());
  }
  for (const std::string& path : opt.models) PrintKernels(LoadModelFile(path).value(), opt, cost);
  return 0;
}

// The run file (store/): writing and reading a synthetic 10,000-operator plan, and the
// recording overhead per training step. Targets (issue 5): the plan writes in < 1 s and
// reads back in < 0.5 s. Figures and how to reproduce them: benchmarks/store.md.
//
//   build/bin/bench_store                                # all, console table
//   build/bin/bench_store --benchmark_filter=Plan        # the plan only
//   BENCH_STORE_DIR=/some/disk build/bin/bench_store     # where the files go (default: /tmp)
//
// The plan: 5,000 forward and 5,000 backward operators on a (2,2,2) mesh (each with 3
// candidate strategies), 10,000 tensors, 20,000 edges with consumer layouts, 2,000
// redistributions of 2 steps each (per-rank bytes, rank groups), an SPMD program of 12,000
// instructions: about 88,000 rows.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "shardscope/store/reader.h"
#include "shardscope/store/summary.h"
#include "shardscope/store/writer.h"

namespace {

using namespace shardscope::store;

constexpr int kOperators = 10000;
constexpr int kRedistributions = 2000;
constexpr int kRanks = 8;

std::string BenchDir() {
  const char* dir = std::getenv("BENCH_STORE_DIR");
  return dir != nullptr ? dir : std::filesystem::temp_directory_path().string();
}

std::string BenchPath(const std::string& name) {
  return BenchDir() + "/shardscope-bench-" + std::to_string(getpid()) + "-" + name + ".db";
}

void RemoveRun(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + suffix);
}

struct Plan {
  MeshRecord mesh{0, "main", {2, 2, 2}, {"dp", "sp", "mp"}, {}};
  std::vector<OperatorRecord> operators;
  std::vector<TensorRecord> tensors;
  std::vector<EdgeRecord> edges;
  std::vector<RedistributionRecord> redistributions;
  ProgramRecord program;
};

const Plan& SyntheticPlan() {
  static const Plan plan = [] {
    Plan p;
    const int forward = kOperators / 2;
    for (int i = 0; i < kOperators; ++i) {
      const bool backward = i >= forward;
      OperatorRecord o;
      o.id = i;
      const std::string base =
          "block" + std::to_string((i % forward) / 10) + ".op" + std::to_string(i % 10);
      o.name = backward ? "grad." + base : base;
      o.scope = (backward ? "grad.block" : "block") + std::to_string((i % forward) / 10);
      o.kind = i % 3 == 0 ? "MatMul" : (i % 3 == 1 ? "Add" : "Relu");
      o.is_backward = backward;
      o.forward_id = backward ? i - forward : kNone;
      o.mesh_id = 0;
      o.strategy = "((2,4),(4,1))";
      o.provenance = backward ? "derived" : (i % 7 == 0 ? "user" : "propagated");
      o.provenance_detail = "from " + base + " over input 0";
      o.provenance_op = i > 0 && !backward ? i - 1 : kNone;
      o.cost = 1e-4 * (i % 13);
      o.attrs = R"({"transpose_b":false})";
      for (int c = 0; c < 3; ++c) {
        CandidateRecord cand;
        cand.strategy = "((" + std::to_string(1 << c) + ",4),(4,1))";
        cand.cost = 1e-4 * (c + 1);
        cand.compute_seconds = 8e-5;
        cand.comm_seconds = 2e-5 * c;
        cand.memory_bytes = 4096 << c;
        cand.note = c == 0 ? "chosen" : "runner-up";
        o.candidates.push_back(std::move(cand));
      }
      p.operators.push_back(std::move(o));

      TensorRecord t;
      t.id = i;
      t.name = base + ":0";
      t.shape = {64, 1024};
      t.kind = backward ? "gradient" : "activation";
      t.producer_op = i;
      t.layout = "[dp | mp]";
      t.mesh_id = 0;
      p.tensors.push_back(std::move(t));
      if (i > 0) {
        for (int input = 0; input < 2; ++input) {
          EdgeRecord e;
          e.tensor_id = input == 0 ? i - 1 : i / 2;
          e.src_op = e.tensor_id;
          e.dst_op = i;
          e.dst_input = input;
          e.layout = input == 0 ? "[dp | mp]" : "[dp.sp | -]";
          e.mesh_id = 0;
          p.edges.push_back(std::move(e));
        }
      }
    }
    for (int r = 0; r < kRedistributions; ++r) {
      RedistributionRecord x;
      x.id = r;
      x.tensor_id = r * 5;
      x.consumer_op = r * 5 + 1;
      x.consumer_input = 0;
      x.from_layout = "P(sp)";
      x.from_mesh_id = x.to_mesh_id = x.plan_mesh_id = 0;
      x.to_layout = "[dp | mp]";
      x.reason = "the consumer needs its input reduced over sp and split over mp";
      x.bytes = x.lower_bound_bytes = 65536;
      x.bytes_total = x.lower_bound_total = 65536 * kRanks;
      x.lower_bound_per_rank.assign(kRanks, 65536);
      x.predicted_seconds = 3e-5;
      for (int s = 0; s < 2; ++s) {
        RedistStepRecord step;
        step.ordinal = s;
        step.kind = s == 0 ? "reduce-scatter" : "all-gather";
        step.axes = {s + 1};
        step.axis_names = {s == 0 ? "sp" : "mp"};
        step.dim = 1;
        step.groups = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
        step.bytes_sent_max = step.bytes_recv_max = 32768;
        step.bytes_sent.assign(kRanks, 32768);
        step.bytes_recv.assign(kRanks, 32768);
        step.messages = 1;
        step.seconds = 1.5e-5;
        step.layout_after = s == 0 ? "[dp | sp]" : "[dp | mp]";
        step.reason = s == 0 ? "reduce the partial sum" : "gather along mp";
        x.steps.push_back(std::move(step));
      }
      p.redistributions.push_back(std::move(x));
    }
    p.program.rank = kNone;
    p.program.text = "(the SPMD program, 12000 instructions)";
    for (int i = 0; i < kOperators + kRedistributions; ++i) {
      InstructionRecord in;
      in.ordinal = i;
      const bool redistribute = i % 6 == 5 && i / 6 < kRedistributions;
      in.kind = redistribute ? "redistribute" : "compute";
      in.op_id = redistribute ? kNone : i % kOperators;
      in.redistribution_id = redistribute ? i / 6 : kNone;
      in.text = redistribute ? "redistribute P(sp) -> [dp | mp]" : "compute";
      p.program.instructions.push_back(std::move(in));
    }
    return p;
  }();
  return plan;
}

RunInfo BenchRun() {
  RunInfo run;
  run.name = "bench";
  run.mode = "plan";
  run.search = "recursive_programming";
  run.devices = kRanks;
  return run;
}

bool WritePlan(RunWriter& w, const Plan& p, benchmark::State& state) {
  const auto check = [&](const Status& st) {
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    return st.ok();
  };
  if (!check(w.AddMesh(p.mesh))) return false;
  for (const auto& o : p.operators) {
    if (!check(w.AddOperator(o))) return false;
  }
  for (const auto& t : p.tensors) {
    if (!check(w.AddTensor(t))) return false;
  }
  for (const auto& e : p.edges) {
    if (!check(w.AddEdge(e))) return false;
  }
  for (const auto& r : p.redistributions) {
    if (!check(w.AddRedistribution(r))) return false;
  }
  return check(w.AddProgram(p.program)) && check(w.Commit());
}

// Create, record the plan, commit, Finish: what a `shardscope plan --record` pays.
void BM_WritePlan10k(benchmark::State& state) {
  const Plan& plan = SyntheticPlan();
  const std::string path = BenchPath("write");
  RunWriterOptions options;
  options.overwrite = true;
  for (auto _ : state) {
    auto w = RunWriter::Create(path, BenchRun(), options);
    if (!w.ok()) {
      state.SkipWithError(w.status().message().c_str());
      break;
    }
    if (!WritePlan(**w, plan, state)) break;
    if (Status st = (*w)->Finish(RunStatus::kCompleted); !st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  state.counters["file_MiB"] = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);
  RemoveRun(path);
}
BENCHMARK(BM_WritePlan10k)->Unit(benchmark::kMillisecond)->UseRealTime();

// Open and read the whole plan back: operators with candidates, tensors, edges,
// redistributions with steps, programs with instructions.
void BM_ReadPlan10k(benchmark::State& state) {
  const std::string path = BenchPath("read");
  {
    RunWriterOptions options;
    options.overwrite = true;
    auto w = RunWriter::Create(path, BenchRun(), options);
    if (!w.ok() || !WritePlan(**w, SyntheticPlan(), state)) return;
    (void)(*w)->Finish(RunStatus::kCompleted);
  }
  int64_t rows = 0;
  for (auto _ : state) {
    auto r = RunReader::Open(path);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      break;
    }
    auto ops = (*r)->Operators();
    auto tensors = (*r)->Tensors();
    auto edges = (*r)->Edges();
    auto redists = (*r)->Redistributions();
    auto programs = (*r)->Programs();
    if (!ops.ok() || !tensors.ok() || !edges.ok() || !redists.ok() || !programs.ok()) {
      state.SkipWithError("read failed");
      break;
    }
    rows = static_cast<int64_t>(ops->size() + tensors->size() + edges->size() + redists->size() +
                                programs->front().instructions.size());
    benchmark::DoNotOptimize(rows);
  }
  state.counters["records"] = static_cast<double>(rows);
  RemoveRun(path);
}
BENCHMARK(BM_ReadPlan10k)->Unit(benchmark::kMillisecond)->UseRealTime();

// `shardscope inspect --json` on the same plan: read and render.
void BM_SummaryJson10k(benchmark::State& state) {
  const std::string path = BenchPath("summary");
  {
    RunWriterOptions options;
    options.overwrite = true;
    auto w = RunWriter::Create(path, BenchRun(), options);
    if (!w.ok() || !WritePlan(**w, SyntheticPlan(), state)) return;
    (void)(*w)->Finish(RunStatus::kCompleted);
  }
  size_t bytes = 0;
  for (auto _ : state) {
    auto r = RunReader::Open(path);
    auto json = r.ok() ? RunSummaryJson(**r) : Result<std::string>(r.status());
    if (!json.ok()) {
      state.SkipWithError(json.status().message().c_str());
      break;
    }
    bytes = json->size();
  }
  state.counters["json_MiB"] = static_cast<double>(bytes) / (1 << 20);
  RemoveRun(path);
}
BENCHMARK(BM_SummaryJson10k)->Unit(benchmark::kMillisecond)->UseRealTime();

// Per training step: AddStep (the step and one row per rank) and Commit, as the trainer
// calls them. Args: ranks, background checkpoints (1: the default; they run on their own
// thread, and the wall time of the loop is what training sees; 0: SQLite's checkpoints, in
// the committing thread, for comparison).
void BM_StepCommit(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const std::string path = BenchPath("steps" + std::to_string(ranks));
  RunWriterOptions options;
  options.overwrite = true;
  options.background_checkpoint = state.range(1) != 0;
  auto w = RunWriter::Create(path, BenchRun(), options);
  if (!w.ok()) {
    state.SkipWithError(w.status().message().c_str());
    return;
  }
  StepRecord step;
  for (int k = 0; k < ranks; ++k) {
    step.ranks.push_back(
        {k, 1e-3, 2e-4, 1 << 20, 1 << 20, 1 << 22, 1 << 22, 1 << 23, 1 << 24, 1 << 25});
  }
  int64_t n = 0;
  for (auto _ : state) {
    step.step = n++;
    step.loss = 1.0 / static_cast<double>(n);
    step.seconds = 1e-3;
    Status st = (*w)->AddStep(step);
    if (st.ok()) st = (*w)->Commit();
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  (void)(*w)->Finish(RunStatus::kCompleted);
  RemoveRun(path);
}
BENCHMARK(BM_StepCommit)
    ->ArgNames({"ranks", "bg"})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({64, 1})
    ->Args({8, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

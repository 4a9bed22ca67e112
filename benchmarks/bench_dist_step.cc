// Distributed training step (issue 4): the seeds' FFN (784->512->256->128->64->10) under
// several sharding strategies on 1/2/4/8 devices, batch 32 and 256; time per step and bytes
// received per step per rank against the partitioner's prediction
// (DistProgram::PlannedRecvBytes). Figures: benchmarks/distributed.md.
//
// In-process devices (threads; Google Benchmark):
//   build/bin/bench_dist_step
//   build/bin/bench_dist_step --benchmark_filter='megatron' --benchmark_repetitions=5
// Each benchmark builds one DistTrainer per rank (setup, not timed), runs one untimed
// warm-up step, then each iteration runs one step on every device: every rank waits at a
// barrier, rank 0 starts its clock, every rank calls DistTrainer::Step, every rank waits at a
// barrier, rank 0 stops its clock (manual time). Counters: bytes received per step by rank 0,
// measured and planned, and `equal` (1 when, for every rank and every step, the bytes it
// received equal the plan's prediction). After the benchmarks the same figures are printed as
// one table, with the median step time over every timed step of the configuration.
//
// MPI (one process per rank; a plain table, no Google Benchmark):
//   mpirun -np 4 --allow-run-as-root --oversubscribe build/bin/bench_dist_step [--steps=N]
// runs every configuration for the world size (--steps timed steps each, default 30, after
// --warmup untimed ones, default 2), timed on rank 0 between barriers as above.
//
// Bytes are measured with the world communicator's own counters (Communicator::stats(),
// which include every sub-communicator split from it), as the difference around each
// DistTrainer::Step call: all traffic of the step, not only what the executor attributes to
// redistributions (RankStats::bytes_received, checked to agree).
//
// Strategies (annotations on samples::FFN; N = devices):
//   dp         no annotation: data parallel (batch split over N, gradients all-reduced)
//   seed003    dense1 ((2,4),(4,1)), dense3 ((1,8),(8,1)) (seeds/003; N = 8 only)
//   megatron   dense1 ((1,1),(1,N)) columns, dense2 ((1,N),(N,1)) rows
//   mp_dense1  dense1 ((1,N),(N,1)): dense1 split along its input (reduction) dimension
// N = 1 runs dp only (the single-device reference).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models.h"
#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/partition.h"

namespace {

using namespace shardscope;

struct Config {
  std::string strategy;
  int devices = 1;
  int64_t batch = 32;
  std::string Name() const {
    return strategy + "/devices:" + std::to_string(devices) + "/batch:" + std::to_string(batch);
  }
};

std::vector<Config> Configs(const std::vector<int>& device_counts) {
  std::vector<Config> configs;
  for (int n : device_counts) {
    for (int64_t batch : {32, 256}) {
      configs.push_back({"dp", n, batch});
      if (n == 8) configs.push_back({"seed003", n, batch});
      if (n > 1) {
        configs.push_back({"megatron", n, batch});
        configs.push_back({"mp_dense1", n, batch});
      }
    }
  }
  return configs;
}

Result<ModelGraph> BuildModel(const Config& c) {
  samples::FFN net;
  const std::string n = std::to_string(c.devices);
  if (c.strategy == "seed003") {
    net.dense1.matmul.shard("((2,4),(4,1))");
    net.dense3.matmul.shard("((1,8),(8,1))");
  } else if (c.strategy == "megatron") {
    net.dense1.matmul.shard("((1,1),(1," + n + "))");
    net.dense2.matmul.shard("((1," + n + "),(" + n + ",1))");
  } else if (c.strategy == "mp_dense1") {
    net.dense1.matmul.shard("((1," + n + "),(" + n + ",1))");
  }
  return nn::BuildClassifier(net, {1, 28, 28}, c.batch);
}

Result<std::unique_ptr<DistTrainer>> MakeTrainer(const Config& c, int rank) {
  auto model = BuildModel(c);
  if (!model.ok()) return model.status();
  TrainConfig config;
  config.seed = 1;
  config.optimizer = {.kind = OptimizerConfig::kMomentum, .lr = 0.01f, .momentum = 0.9f};
  PartitionOptions options;
  options.devices = c.devices;
  return DistTrainer::Create(std::move(*model), config, options, rank);
}

// What one rank saw over the steps it ran.
struct RankBytes {
  int64_t planned = 0;         // DistProgram::PlannedRecvBytes(rank), per step
  int64_t first_measured = 0;  // world counters, first measured step
  int64_t min_measured = 0;    // min / max over measured steps
  int64_t max_measured = 0;
  int64_t steps = 0;
  bool stats_agree = true;  // RankStats::bytes_received moved by the same amount
  bool Equal() const {
    return steps > 0 && min_measured == planned && max_measured == planned && stats_agree;
  }
  void Add(int64_t measured, int64_t stats_delta) {
    if (steps == 0) first_measured = min_measured = max_measured = measured;
    min_measured = std::min(min_measured, measured);
    max_measured = std::max(max_measured, measured);
    stats_agree = stats_agree && stats_delta == measured;
    ++steps;
  }
};

// One timed step on this rank: barrier, (rank 0) clock, Step, barrier, clock. Returns the
// seconds rank 0 measured (0 on other ranks).
Result<double> TimedStep(Communicator& world, DistTrainer& trainer, const Dataset& data,
                         RankBytes* bytes) {
  if (Status st = world.Barrier(); !st.ok()) return st;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t before = world.stats().bytes_received;
  const int64_t stats_before = trainer.stats().bytes_received;
  auto loss = trainer.Step(world, data.images, data.labels);
  if (!loss.ok()) return loss.status();
  const int64_t measured = world.stats().bytes_received - before;
  const int64_t stats_delta = trainer.stats().bytes_received - stats_before;
  if (Status st = world.Barrier(); !st.ok()) return st;
  const auto t1 = std::chrono::steady_clock::now();
  if (bytes) bytes->Add(measured, stats_delta);
  return world.rank() == 0 ? std::chrono::duration<double>(t1 - t0).count() : 0.0;
}

struct Row {
  Config config;
  std::vector<double> step_seconds;  // rank 0, every timed step
  std::vector<RankBytes> ranks;
  double comm_fraction = 0;  // rank 0: RankStats comm / (comm + compute), timed steps
  int redistributions = 0;   // per step: redistribution instructions
  int collectives = 0;       // per step: their communicating steps (local ones excluded)
  std::string error;
};

// Redistributions per step and their communicating steps (slices and reshapes excluded).
void CountRedistributions(const DistProgram& program, Row* row) {
  row->redistributions = program.NumRedistributions();
  row->collectives = 0;
  for (const DistInstr& in : program.instrs) {
    if (in.kind != DistInstr::Kind::kRedistribute) continue;
    for (const RedistStep& st : in.plan->steps) {
      row->collectives +=
          st.kind != RedistStep::Kind::kLocalSlice && st.kind != RedistStep::Kind::kLocalReshape;
    }
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void PrintTable(const std::vector<Row>& rows, const char* backend) {
  std::printf("\nFFN step, %s (time: rank 0, between barriers; bytes: received per step)\n",
              backend);
  std::printf("%-10s %7s %5s %6s %9s %9s %9s %6s %6s %6s %7s %13s %13s %13s %6s\n", "strategy",
              "devices", "batch", "steps", "median ms", "mean ms", "min ms", "vs dp", "vs 1",
              "comm%", "redist", "rank0 meas. B", "rank0 plan B", "max rank B", "equal");
  // Peers in the same run: data parallel on the same devices and batch, and on one device.
  auto median_of = [&](const std::string& strategy, int devices, int64_t batch) {
    for (const Row& r : rows) {
      if (r.config.strategy == strategy && r.config.devices == devices && r.config.batch == batch &&
          r.error.empty() && !r.step_seconds.empty())
        return Median(r.step_seconds);
    }
    return 0.0;
  };
  auto ratio = [](double a, double b) {
    char buf[16] = "-";
    if (a > 0 && b > 0) std::snprintf(buf, sizeof buf, "%.2f", a / b);
    return std::string(buf);
  };
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-10s %7d %5" PRId64 "  error: %s\n", r.config.strategy.c_str(),
                  r.config.devices, r.config.batch, r.error.c_str());
      continue;
    }
    double mean = 0;
    for (double s : r.step_seconds) mean += s;
    mean /= std::max<size_t>(1, r.step_seconds.size());
    const double min = r.step_seconds.empty()
                           ? 0
                           : *std::min_element(r.step_seconds.begin(), r.step_seconds.end());
    bool equal = !r.ranks.empty();
    int64_t max_rank = 0;
    for (const RankBytes& b : r.ranks) {
      equal = equal && b.Equal();
      max_rank = std::max(max_rank, b.max_measured);
    }
    const RankBytes& r0 = r.ranks.front();
    const double median = Median(r.step_seconds);
    const std::string vs_dp = ratio(median, median_of("dp", r.config.devices, r.config.batch));
    const std::string vs_1 = ratio(median, median_of("dp", 1, r.config.batch));
    const std::string redist =
        std::to_string(r.redistributions) + "/" + std::to_string(r.collectives);
    std::printf("%-10s %7d %5" PRId64 " %6zu %9.3f %9.3f %9.3f %6s %6s %5.1f%% %7s %13" PRId64
                " %13" PRId64 " %13" PRId64 " %6s\n",
                r.config.strategy.c_str(), r.config.devices, r.config.batch, r.step_seconds.size(),
                1e3 * median, 1e3 * mean, 1e3 * min, vs_dp.c_str(), vs_1.c_str(),
                100 * r.comm_fraction, redist.c_str(), r0.first_measured, r0.planned, max_rank,
                equal ? "yes" : "no");
  }
  std::printf(
      "(vs dp / vs 1: median step time over data parallel's on the same devices / on one device,\n"
      " same batch; comm%%: rank 0's share of step time inside redistributions, waiting\n"
      " included; redist: redistributions per step / their communicating steps; equal: yes\n"
      " when every rank received exactly its planned bytes in every step, and the executor's\n"
      " RankStats agree with the communicator's counters)\n");
  bool any_unequal = false;
  for (const Row& r : rows) {
    for (size_t k = 0; k < r.ranks.size(); ++k) {
      const RankBytes& b = r.ranks[k];
      if (!r.error.empty() || b.Equal()) continue;
      if (!any_unequal) std::printf("\nRanks whose bytes differ from the plan:\n");
      any_unequal = true;
      std::printf("  %s rank %zu: planned %" PRId64 ", measured %" PRId64 "..%" PRId64 "%s\n",
                  r.config.Name().c_str(), k, b.planned, b.min_measured, b.max_measured,
                  b.stats_agree ? "" : " (RankStats disagree)");
    }
  }
}

// ---------------------------------------------------------------------------------------
// In-process mode (Google Benchmark).

std::map<std::string, Row>& InProcessRows() {
  static std::map<std::string, Row> rows;
  return rows;
}
std::vector<std::string>& InProcessOrder() {
  static std::vector<std::string> order;
  return order;
}

void BM_DistStep(benchmark::State& state, Config config) {
  const int n = config.devices;
  Row& row = InProcessRows()[config.Name()];
  row.config = config;
  std::vector<std::unique_ptr<DistTrainer>> trainers(n);
  for (int r = 0; r < n; ++r) {
    auto t = MakeTrainer(config, r);
    if (!t.ok()) {
      row.error = t.status().message();
      state.SkipWithError(row.error.c_str());
      return;
    }
    trainers[r] = std::move(*t);
  }
  const Dataset data = MakeSyntheticDataset(config.batch, {1, 28, 28}, 10, /*seed=*/7);
  InProcessWorld world(n);
  if (row.ranks.empty()) {
    CountRedistributions(trainers[0]->program(), &row);
    row.ranks.resize(n);
    for (int r = 0; r < n; ++r) row.ranks[r].planned = trainers[r]->program().PlannedRecvBytes(r);
  }
  // Warm-up step (first touch, optimizer state), not timed and not counted.
  Status st = world.Run([&](Communicator& comm) -> Status {
    auto s = TimedStep(comm, *trainers[comm.rank()], data, nullptr);
    return s.ok() ? Status::Ok() : s.status();
  });
  if (!st.ok()) {
    row.error = st.message();
    state.SkipWithError(row.error.c_str());
    return;
  }
  const RankStats start = trainers[0]->stats();
  double seconds = 0;
  for (auto _ : state) {
    st = world.Run([&](Communicator& comm) -> Status {
      const int r = comm.rank();
      auto s = TimedStep(comm, *trainers[r], data, &row.ranks[r]);
      if (!s.ok()) return s.status();
      if (r == 0) seconds = *s;
      return Status::Ok();
    });
    if (!st.ok()) {
      row.error = st.message();
      state.SkipWithError(row.error.c_str());
      return;
    }
    state.SetIterationTime(seconds);
    row.step_seconds.push_back(seconds);
  }
  const RankStats& end = trainers[0]->stats();
  const double comm = end.comm_seconds - start.comm_seconds;
  const double compute = end.compute_seconds - start.compute_seconds;
  if (comm + compute > 0) row.comm_fraction = comm / (comm + compute);
  bool equal = true;
  for (const RankBytes& b : row.ranks) equal = equal && b.Equal();
  state.counters["recv_B_rank0"] = static_cast<double>(row.ranks[0].first_measured);
  state.counters["planned_B_rank0"] = static_cast<double>(row.ranks[0].planned);
  state.counters["equal"] = equal ? 1 : 0;
  state.counters["examples/s"] = benchmark::Counter(static_cast<double>(config.batch),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

int RunInProcess(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (const Config& c : Configs({1, 2, 4, 8})) {
    InProcessOrder().push_back(c.Name());
    benchmark::RegisterBenchmark(("BM_DistStep/" + c.Name()).c_str(), BM_DistStep, c)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::vector<Row> rows;
  for (const std::string& name : InProcessOrder()) {
    auto it = InProcessRows().find(name);
    if (it != InProcessRows().end()) rows.push_back(it->second);
  }
  if (!rows.empty()) PrintTable(rows, "in-process devices (threads)");
  return 0;
}

// ---------------------------------------------------------------------------------------
// MPI mode (plain).

// Rank 0 collects every rank's RankBytes (point-to-point, exact 64-bit values).
Status GatherBytes(Communicator& world, const RankBytes& mine, std::vector<RankBytes>* all) {
  constexpr int kTag = 4242;
  const int64_t record[6] = {mine.planned,      mine.first_measured, mine.min_measured,
                             mine.max_measured, mine.steps,          mine.stats_agree ? 1 : 0};
  const auto* raw = reinterpret_cast<const std::byte*>(record);
  if (world.rank() != 0) return world.SendBytes({raw, sizeof record}, 0, kTag);
  all->assign(world.size(), RankBytes{});
  (*all)[0] = mine;
  for (int r = 1; r < world.size(); ++r) {
    auto bytes = world.RecvBytes(r, kTag);
    if (!bytes.ok()) return bytes.status();
    if (bytes->size() != sizeof record)
      return Status::Internal("bad record from rank " + std::to_string(r));
    int64_t in[6];
    std::memcpy(in, bytes->data(), sizeof in);
    RankBytes& b = (*all)[r];
    b.planned = in[0];
    b.first_measured = in[1];
    b.min_measured = in[2];
    b.max_measured = in[3];
    b.steps = in[4];
    b.stats_agree = in[5] != 0;
  }
  return Status::Ok();
}

int RunMpi(int argc, char** argv) {
  int steps = 30, warmup = 2;
  for (int i = 1; i < argc; ++i) {
    int v = 0;
    if (std::sscanf(argv[i], "--steps=%d", &v) == 1) {
      steps = std::max(1, v);
    } else if (std::sscanf(argv[i], "--warmup=%d", &v) == 1) {
      warmup = std::max(0, v);
    } else {
      std::fprintf(stderr, "unknown argument %s (MPI mode takes --steps=N --warmup=N)\n", argv[i]);
      return 1;
    }
  }
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  const int n = world.size();
  const int rank = world.rank();
  std::vector<Row> rows;
  for (const Config& c : Configs({n})) {
    Row row;
    row.config = c;
    auto trainer = MakeTrainer(c, rank);
    // Every rank builds the same program, so they fail together; stop on any failure.
    if (!trainer.ok()) {
      row.error = trainer.status().message();
      rows.push_back(row);
      continue;
    }
    const Dataset data = MakeSyntheticDataset(c.batch, {1, 28, 28}, 10, /*seed=*/7);
    RankBytes mine;
    mine.planned = (*trainer)->program().PlannedRecvBytes(rank);
    CountRedistributions((*trainer)->program(), &row);
    for (int i = 0; i < warmup; ++i) {
      if (auto s = TimedStep(world, **trainer, data, nullptr); !s.ok()) {
        std::fprintf(stderr, "rank %d %s: %s\n", rank, c.Name().c_str(),
                     s.status().message().c_str());
        return 1;
      }
    }
    const RankStats start = (*trainer)->stats();
    for (int i = 0; i < steps; ++i) {
      auto s = TimedStep(world, **trainer, data, &mine);
      if (!s.ok()) {
        std::fprintf(stderr, "rank %d %s: %s\n", rank, c.Name().c_str(),
                     s.status().message().c_str());
        return 1;
      }
      row.step_seconds.push_back(*s);
    }
    const RankStats& end = (*trainer)->stats();
    const double comm = end.comm_seconds - start.comm_seconds;
    const double compute = end.compute_seconds - start.compute_seconds;
    if (comm + compute > 0) row.comm_fraction = comm / (comm + compute);
    if (Status st = GatherBytes(world, mine, &row.ranks); !st.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, st.message().c_str());
      return 1;
    }
    rows.push_back(std::move(row));
  }
  if (rank == 0) PrintTable(rows, ("MPI, " + std::to_string(n) + " processes").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (RunningUnderMpi()) return RunMpi(argc, argv);
  return RunInProcess(argc, argv);
}

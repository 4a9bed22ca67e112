// `shardscope calibrate [--out FILE]`: measures this machine's collective latency and
// overhead, link bandwidth, GEMM throughput and memory bandwidth, and writes a cost profile
// that `plan` and `train` read with --profile FILE (cost_model.h). The load-sensitive figures
// are measured in rounds spread over a few seconds and combined per figure (calibration.h).
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "ops/op_registry.h"
#include "shardscope/calibration.h"
#include "shardscope/communicator.h"
#include "shardscope/cost/profile_fields.h"
#include "shardscope/cost_model.h"

namespace shardscope::cli {
namespace {

struct CalibrateOptions {
  std::string out;
  int devices = 8;
  int repeats = 30;
  int trials = 15;        // rounds
  double duration = 5.0;  // seconds the rounds are spread over
  bool show_rounds = false;
};

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median seconds of `repeats` runs of `fn` on every rank (rank-synchronised).
Result<double> TimeCollective(Communicator& comm, int repeats, const std::function<Status()>& fn) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    SHARDSCOPE_RETURN_IF_ERROR(comm.Barrier());
    const auto start = Clock::now();
    SHARDSCOPE_RETURN_IF_ERROR(fn());
    times.push_back(Since(start));
  }
  std::sort(times.begin(), times.end());
  // Every rank agrees on rank 0's figure.
  std::vector<float> t = {static_cast<float>(times[times.size() / 2])};
  SHARDSCOPE_RETURN_IF_ERROR(comm.Broadcast(t, 0));
  return static_cast<double>(t[0]);
}

// Bytes every rank holds after the bandwidth measurement's all-gather.
constexpr size_t kGatherBytes = 4u << 20;

// A small GEMM, as a layer of the samples computes between two collectives.
void SmallGemm(Eigen::MatrixXf& a, const Eigen::MatrixXf& b, Eigen::MatrixXf& c) {
  c.noalias() = a * b;
  a(0, 0) = c(0, 0) * 1e-6f;  // a data dependency: no GEMM can be skipped
}

// The cost of one collective when every rank arrives from computation (threads sharing
// cores must each be scheduled again): k phases of one s^3 GEMM on every rank, each followed
// by an all-reduce, against the same k GEMMs followed by one all-reduce, divided by k - 1.
Result<double> MeasureInterleaved(Communicator& world, int repeats, int s, int k) {
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(s, s), b = Eigen::MatrixXf::Random(s, s), c(s, s);
  std::vector<float> one(1, 1.0f), out(1);
  // Each round times both back to back and keeps their difference, the median over rounds:
  // two medians taken apart moved by up to 200 us under other processes' load.
  const int runs = std::max(5, repeats / 5);
  std::vector<double> extra;
  for (int r = 0; r < runs; ++r) {
    SHARDSCOPE_ASSIGN_OR_RETURN(double each, TimeCollective(world, 1, [&]() -> Status {
                                  for (int i = 0; i < k; ++i) {
                                    SmallGemm(a, b, c);
                                    SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(one, out));
                                  }
                                  return Status::Ok();
                                }));
    SHARDSCOPE_ASSIGN_OR_RETURN(double once, TimeCollective(world, 1, [&]() -> Status {
                                  for (int i = 0; i < k; ++i) SmallGemm(a, b, c);
                                  return world.AllReduce(one, out);
                                }));
    extra.push_back((each - once) / (k - 1));
  }
  std::sort(extra.begin(), extra.end());
  return std::max(0.0, extra[extra.size() / 2]);
}

// A 4-byte all-reduce in groups of `size` consecutive ranks, every group at once. Timed between
// collectives on every rank, as in a program (rank 0's group alone finishes before the other
// groups are scheduled): k rounds of a group all-reduce and a world all-reduce against k world
// all-reduces, divided by k, the median over the round's runs.
Result<double> MeasureGroupsBetween(Communicator& world, int repeats, int size) {
  std::vector<float> one(1, 1.0f), out(1);
  SHARDSCOPE_ASSIGN_OR_RETURN(auto groups, world.Split(world.rank() / size, world.rank()));
  constexpr int k = 10;
  std::vector<double> extra;
  for (int r = 0; r < std::max(5, repeats / 5); ++r) {
    SHARDSCOPE_ASSIGN_OR_RETURN(double each, TimeCollective(world, 1, [&]() -> Status {
                                  for (int i = 0; i < k; ++i) {
                                    SHARDSCOPE_RETURN_IF_ERROR(groups->AllReduce(one, out));
                                    SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(one, out));
                                  }
                                  return Status::Ok();
                                }));
    SHARDSCOPE_ASSIGN_OR_RETURN(double once, TimeCollective(world, 1, [&]() -> Status {
                                  for (int i = 0; i < k; ++i)
                                    SHARDSCOPE_RETURN_IF_ERROR(world.AllReduce(one, out));
                                  return Status::Ok();
                                }));
    extra.push_back((each - once) / k);
  }
  std::sort(extra.begin(), extra.end());
  return std::max(0.0, extra[extra.size() / 2]);
}

// One round's collectives (CalibrationRound's first five figures) on `world`.
Status MeasureCommunication(Communicator& world, int repeats, CalibrationRound* m) {
  const int n = world.size();
  std::vector<float> one(1, 1.0f), out(1);
  SHARDSCOPE_ASSIGN_OR_RETURN(m->all_reduce_all_s, TimeCollective(world, repeats, [&] {
                                return world.AllReduce(one, out);
                              }));
  // A pair of ranks: the fixed part of a collective.
  SHARDSCOPE_ASSIGN_OR_RETURN(auto pair, world.Split(world.rank() < 2 ? 0 : 1, world.rank()));
  if (world.rank() < 2) {
    SHARDSCOPE_ASSIGN_OR_RETURN(m->all_reduce_pair_s, TimeCollective(*pair, repeats, [&] {
                                  return pair->AllReduce(one, out);
                                }));
  }
  std::vector<float> t = {static_cast<float>(m->all_reduce_pair_s)};
  SHARDSCOPE_RETURN_IF_ERROR(world.Broadcast(t, 0));
  m->all_reduce_pair_s = t[0];
  // Every rank in a pair at once (n / 2 pairs): what a redistribution step along one mesh axis
  // of 2 adds to a training step, its groups running side by side on the shared cores; and the
  // same in two halves (groups of 4 of 8), which cost nearly as much as every rank together.
  if (n > 2 && n % 2 == 0) {
    SHARDSCOPE_ASSIGN_OR_RETURN(m->all_reduce_pairs_s, MeasureGroupsBetween(world, repeats, 2));
  }
  if (n % 2 == 0 && n / 2 > 2) {
    SHARDSCOPE_ASSIGN_OR_RETURN(m->all_reduce_halves_s,
                                MeasureGroupsBetween(world, repeats, n / 2));
  }
  const size_t per_rank = kGatherBytes / sizeof(float) / static_cast<size_t>(n);
  std::vector<float> part(per_rank, 1.0f), all(per_rank * n);
  SHARDSCOPE_ASSIGN_OR_RETURN(
      m->all_gather_all_s,
      TimeCollective(world, std::max(3, repeats / 10), [&] { return world.AllGather(part, all); }));
  // After a short phase (96^3: about what a layer of the samples computes between two
  // collectives) and after a long one (256^3: ~2 ms on 8 threads sharing 2 cores, past the
  // time the scheduler takes to spread a phase's threads over the cores).
  SHARDSCOPE_ASSIGN_OR_RETURN(m->interleaved_s, MeasureInterleaved(world, repeats, 96, 10));
  SHARDSCOPE_ASSIGN_OR_RETURN(m->interleaved_long_s, MeasureInterleaved(world, repeats, 256, 6));
  return Status::Ok();
}

// Fits the alpha-beta model: t(p) = 2 (p-1) alpha + overhead for tiny all-reduces, and
// (p-1) alpha + overhead + (p-1)/p n / beta for the all-gather.
CostModel Fit(const CalibrationRound& m, int n) {
  CostModel c;
  if (n > 2) {
    c.latency_s = std::max(0.0, (m.all_reduce_all_s - m.all_reduce_pair_s) / (2.0 * (n - 2)));
    c.collective_overhead_s = std::max(0.0, m.all_reduce_pair_s - 2 * c.latency_s);
  } else {
    c.latency_s = m.all_reduce_all_s / 2;
    c.collective_overhead_s = 0;
  }
  const double fixed = (n - 1) * c.latency_s + c.collective_overhead_s;
  const double moving = std::max(1e-9, m.all_gather_all_s - fixed);
  const size_t gathered = kGatherBytes / sizeof(float) / n * n * sizeof(float);
  c.default_bandwidth = (n - 1.0) / n * static_cast<double>(gathered) / moving;
  // What a collective costs beyond the fit when the ranks come from computation.
  c.in_process.collective_handoff_s = std::max(0.0, m.interleaved_s - m.all_reduce_all_s);
  c.flops = m.single_gemm_flops;
  c.memory_bandwidth = m.memory_bandwidth;
  c.gemm_rates = m.gemm_rates;
  c.conv_gemm_rates = m.conv_gemm_rates;
  c.kernel_rates["MaxPool2D"] = m.max_pool_bytes_per_s;
  return c;
}

// One thread's GEMM flop/s: the best of 3 on 384^3.
double MeasureGemm() {
  const int s = 384;
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(s, s), b = Eigen::MatrixXf::Random(s, s), c(s, s);
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    c.noalias() = a * b;
    best = std::min(best, Since(start));
  }
  return 2.0 * s * s * s / best;
}

// `flop` / seconds of one call of `kernel` on `ctx`, timed over enough calls for ~2 ms (one
// sample: calibrate keeps the best over the rounds that measure kernels).
double KernelFlops(const KernelFn& kernel, const KernelContext& ctx, double flop) {
  const int calls = static_cast<int>(std::clamp(2e6 / flop, 1.0, 1000.0));
  kernel(ctx);  // warm: packing and scratch buffers allocated
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) kernel(ctx);
  return flop / (Since(start) / calls);
}

// The engine's MatMul kernel (what MatMul and BatchMatMul run) on out[rows, cols] =
// a[rows, depth] . b[depth, cols]: flop/s (KernelFlops).
double MatMulKernelFlops(int64_t rows, int64_t depth, int64_t cols) {
  Tensor a(Shape{rows, depth}), b(Shape{depth, cols}), c(Shape{rows, cols});
  for (int64_t i = 0; i < a.size(); ++i) a.data()[i] = 1e-3f * static_cast<float>(i % 97);
  for (int64_t i = 0; i < b.size(); ++i) b.data()[i] = 2e-3f * static_cast<float>(i % 89);
  const OpAttrs attrs;
  const Tensor* in[] = {&a, &b};
  Tensor* out[] = {&c};
  return KernelFlops(GetOpDef(OpKind::kMatMul).forward, KernelContext{attrs, in, out},
                     2.0 * static_cast<double>(rows * depth * cols));
}

// The engine's Conv2D kernel (ops/conv.cc: per image, im2col, then out[rows, cols] =
// w[rows, depth] . columns[depth, cols] in Eigen) on a convolution whose GEMM has exactly
// that shape: `depth` input channels, a 1x1 window at stride 2 over a row of 2 cols - 1
// pixels (a strided window, so the columns are copied as for any window). Flop/s of the
// GEMM, im2col included, measured as MatMulKernelFlops.
double ConvKernelFlops(int64_t rows, int64_t depth, int64_t cols) {
  Tensor x(Shape{1, depth, 1, 2 * cols - 1}), w(Shape{rows, depth, 1, 1}),
      y(Shape{1, rows, 1, cols});
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = 1e-3f * static_cast<float>(i % 97);
  for (int64_t i = 0; i < w.size(); ++i) w.data()[i] = 2e-3f * static_cast<float>(i % 89);
  OpAttrs attrs;
  attrs.stride[1] = 2;
  const Tensor* in[] = {&x, &w};
  Tensor* out[] = {&y};
  return KernelFlops(GetOpDef(OpKind::kConv2D).forward, KernelContext{attrs, in, out},
                     2.0 * static_cast<double>(rows * depth * cols));
}

// MaxPool2D's forward and gradient kernels together (CostModel::kernel_rates): bytes of the
// input per second, on LeNet-5's first pool (2x2 windows, stride 2, 6 channels of 28x28, four
// images: one device's share of a batch of 32 on 8).
double MaxPoolBytesPerSecond() {
  Tensor x(Shape{4, 6, 28, 28}), y(Shape{4, 6, 14, 14}), dy(Shape{4, 6, 14, 14}), dx(x.shape());
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = 1e-3f * static_cast<float>(i % 97);
  for (int64_t i = 0; i < dy.size(); ++i) dy.data()[i] = 2e-3f * static_cast<float>(i % 89);
  OpAttrs attrs;
  attrs.kernel[0] = attrs.kernel[1] = 2;
  attrs.stride[0] = attrs.stride[1] = 2;
  const double bytes = 4.0 * static_cast<double>(x.size());
  const Tensor* fwd_in[] = {&x};
  Tensor* fwd_out[] = {&y};
  const double forward = KernelFlops(GetOpDef(OpKind::kMaxPool2D).forward,
                                     KernelContext{attrs, fwd_in, fwd_out}, bytes);
  const Tensor* grad_in[] = {&dy, &x};
  Tensor* grad_out[] = {&dx};
  const double gradient = KernelFlops(GetOpDef(OpKind::kMaxPool2DGrad).forward,
                                      KernelContext{attrs, grad_in, grad_out}, bytes);
  return 1.0 / (1.0 / forward + 1.0 / gradient);
}

// A GEMM's rate by shape (cost_model.h GemmRateTable) from `flops_at(rows, depth, cols)`:
// each dimension alone swept over small sizes with the other two at the base size. About
// 0.1 s.
GemmRateTable MeasureGemmRates(const std::function<double(int64_t, int64_t, int64_t)>& flops_at) {
  GemmRateTable t;
  const int64_t base = t.base;
  t.base_flops = flops_at(base, base, base);
  for (int64_t d : {1, 2, 4, 8, 16, 32, 64, 128}) {
    t.rows.emplace_back(d, flops_at(d, base, base));
    t.depth.emplace_back(d, flops_at(base, d, base));
    t.cols.emplace_back(d, flops_at(base, base, d));
  }
  for (auto* axis : {&t.rows, &t.depth, &t.cols}) axis->emplace_back(base, t.base_flops);
  return t;
}

// The GEMM the device threads run to measure compute slots: s x s, about what one device
// computes between two collectives in the samples.
constexpr int kSlotGemmSize = 192;

// One device thread's GEMM operands for the compute-slot measurement.
struct SlotOperands {
  Eigen::MatrixXf a, b, c;
};

// Wall seconds for `threads` threads each running `gemms` GEMMs of kSlotGemmSize at once.
// The operands are filled before the clock starts: Eigen's Random draws from std::rand,
// which holds one process-wide lock, and 8 threads filling their matrices at once took
// 10-17 ms on this 2-vCPU VM (0.5 ms for one thread), a third of the timed window, which
// read as fewer compute slots (0.94 where the GEMMs alone reach about 1.5).
double TimeConcurrentGemms(int threads, int gemms) {
  const int s = kSlotGemmSize;
  std::vector<SlotOperands> operands(threads);
  for (SlotOperands& o : operands) {
    o.a = Eigen::MatrixXf::Random(s, s);
    o.b = Eigen::MatrixXf::Random(s, s);
    o.c.resize(s, s);
  }
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (SlotOperands& o : operands) {
    workers.emplace_back([&o, gemms] {
      for (int i = 0; i < gemms; ++i) SmallGemm(o.a, o.b, o.c);
    });
  }
  for (std::thread& w : workers) w.join();
  return Since(start);
}

// The GEMM flop/s `devices` threads reach together, each running 40 GEMMs. Divided by one
// thread's undisturbed rate it gives the compute slots: 8 device threads on 2 free cores give
// ~2; when other processes hold cores it falls (below 1 when the devices share less than one
// core), which is what a training step then sees. (The ratio of 8 threads to one thread
// timed under the same load swung between 1 and 2 on a shared machine: a lone thread gets
// only its share of a loaded core too.)
double MeasureConcurrentGemmFlops(int devices) {
  const int gemms = 40, s = kSlotGemmSize;
  return devices * gemms * 2.0 * s * s * s / TimeConcurrentGemms(devices, gemms);
}

// Bytes/s of a 64 MB copy (read + write), the second of two (the first touches the pages).
double MeasureMemory() {
  const size_t bytes = 64u << 20;
  std::vector<char> from(bytes, 1), to(bytes);
  std::memcpy(to.data(), from.data(), bytes);
  const auto start = Clock::now();
  std::memcpy(to.data(), from.data(), bytes);
  return 2.0 * bytes / Since(start);
}

// One thread's rates in round `i` of `rounds`: the GEMM in every round, the kernels' tables,
// MaxPool2D and the memory bandwidth in every third (about 0.2 s each time).
void MeasureThreadRates(int i, int rounds, CalibrationRound* round) {
  round->single_gemm_flops = MeasureGemm();
  if (i % 3 == 1 || rounds == 1) {
    round->gemm_rates = MeasureGemmRates(MatMulKernelFlops);
    round->conv_gemm_rates = MeasureGemmRates(ConvKernelFlops);
    round->max_pool_bytes_per_s = MaxPoolBytesPerSecond();
    round->memory_bandwidth = MeasureMemory();
  }
}

int RunCalibrate(const CalibrateOptions& o) {
  const bool mpi = RunningUnderMpi();
  int n = o.devices, rank = 0;
  std::unique_ptr<Communicator> world;
  if (mpi) {
    auto made = MpiWorld();
    if (!made.ok()) return Fail(kExitRunFailure, made.status().message());
    world = std::move(*made);
    n = world->size();
    rank = world->rank();
    if (n < 2) return Fail(kExitBadInput, "calibrate under mpirun needs at least 2 ranks");
  }
  // Rounds evenly spread over o.duration: a disturbance from another process then falls into
  // a few rounds of every figure (calibration.h), not into every measurement of one figure.
  std::vector<CalibrationRound> rounds(o.trials);
  const auto begin = Clock::now();
  for (int i = 0; i < o.trials; ++i) {
    std::this_thread::sleep_until(begin +
                                  std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(o.duration * i / o.trials)));
    CalibrationRound& round = rounds[i];
    Status st;
    if (mpi) {
      st = MeasureCommunication(*world, o.repeats, &round);
    } else {
      st = RunOnDevices(n, [&](Communicator& comm) -> Status {
        CalibrationRound mine;
        SHARDSCOPE_RETURN_IF_ERROR(MeasureCommunication(comm, o.repeats, &mine));
        if (comm.rank() == 0) round = mine;
        return Status::Ok();
      });
      // In-process devices are threads sharing this machine's cores; MPI ranks are taken to
      // have a core each (under --oversubscribe they do not: not measured yet).
      round.concurrent_gemm_flops = MeasureConcurrentGemmFlops(n);
    }
    if (!st.ok()) return Fail(kExitRunFailure, st.message());
    if (!mpi) MeasureThreadRates(i, o.trials, &round);
    if (o.show_rounds && rank == 0) {
      std::printf(
          "round %2d at %5.2f s: all-reduce 2 ranks %.1f us, %d ranks %.1f us, after "
          "computing %.1f us (a long phase %.1f us); all-gather %.2f ms; GEMM one thread %.1f, "
          "all threads %.1f GFLOP/s\n",
          i, Since(begin), round.all_reduce_pair_s * 1e6, n, round.all_reduce_all_s * 1e6,
          round.interleaved_s * 1e6, round.interleaved_long_s * 1e6, round.all_gather_all_s * 1e3,
          round.single_gemm_flops / 1e9, round.concurrent_gemm_flops / 1e9);
    }
  }
  const double seconds = Since(begin);
  if (rank != 0) return kExitOk;
  // MPI: the other ranks would wait for rank 0 in the next round's barrier, spinning on the
  // cores its kernels run on; rank 0 measures them alone once the others have left.
  if (mpi) {
    for (int i = 0; i < o.trials; ++i) MeasureThreadRates(i, o.trials, &rounds[i]);
  }
  const CalibrationRound m = CombineCalibrationRounds(rounds);
  const CalibrationSpread spread = SpreadOfCalibrationRounds(rounds);
  CostModel c = Fit(m, n);
  if (!mpi) {
    c.in_process.compute_slots =
        std::clamp(m.concurrent_gemm_flops / c.flops, 0.05, static_cast<double>(n));
    // Every device thread takes part in every collective step (the groups of a step run at
    // once on shared cores): none costs less than a tiny collective over all of them.
    c.in_process.group_sync_s = m.all_reduce_all_s;
    // A step in pairs waits for the pair only (its groups run on their own communicators).
    c.in_process.pair_sync_s = m.all_reduce_pairs_s;
    c.in_process.half_sync_s = m.all_reduce_halves_s;
    // In-process only: MPI ranks are taken to have a core each, so no phase waits on one core.
    c.in_process.long_phase_handoff_s = std::max(0.0, m.interleaved_long_s - m.all_reduce_all_s);
  }
  const GemmRateTable& g = c.gemm_rates;
  const GemmRateTable& cg = c.conv_gemm_rates;
  std::printf(
      "calibrated on %d %s device(s): %d rounds over %.1f s; each figure the median over the\n"
      "rounds (one thread's rates: the best), in brackets the lowest and highest round\n",
      n, mpi ? "MPI" : "in-process", o.trials, seconds);
  const auto row = [&](const char* what, double CalibrationRound::*field, double unit,
                       const char* unit_name) {
    std::printf("  %-50s %8.1f %s  (%.1f–%.1f)\n", what, m.*field / unit, unit_name,
                spread.low.*field / unit, spread.high.*field / unit);
  };
  row("all-reduce of 4 bytes on 2 ranks", &CalibrationRound::all_reduce_pair_s, 1e-6, "us");
  row("  in pairs, every rank at once, between collectives", &CalibrationRound::all_reduce_pairs_s,
      1e-6, "us");
  if (n % 2 == 0 && n / 2 > 2) {
    row(("  in groups of " + std::to_string(n / 2) + ", both at once, between collectives").c_str(),
        &CalibrationRound::all_reduce_halves_s, 1e-6, "us");
  }
  row(("all-reduce of 4 bytes on " + std::to_string(n) + " ranks").c_str(),
      &CalibrationRound::all_reduce_all_s, 1e-6, "us");
  row(("all-gather of " + std::to_string(kGatherBytes >> 20) + " MB on " + std::to_string(n) +
       " ranks")
          .c_str(),
      &CalibrationRound::all_gather_all_s, 1e-3, "ms");
  row(("all-reduce of 4 bytes on " + std::to_string(n) + " ranks after computing").c_str(),
      &CalibrationRound::interleaved_s, 1e-6, "us");
  row("  the same after a long phase (256^3 GEMMs)", &CalibrationRound::interleaved_long_s, 1e-6,
      "us");
  row("GEMM, one thread", &CalibrationRound::single_gemm_flops, 1e9, "GFLOP/s");
  if (!mpi) {
    row("GEMM, all device threads together", &CalibrationRound::concurrent_gemm_flops, 1e9,
        "GFLOP/s");
  }
  const auto table_row = [&](const char* what, GemmRateTable CalibrationRound::*table) {
    std::printf("  %-50s %8.1f GFLOP/s  (%.1f–%.1f)\n", what, (m.*table).base_flops / 1e9,
                (spread.low.*table).base_flops / 1e9, (spread.high.*table).base_flops / 1e9);
  };
  table_row("MatMul kernel at 256^3, one thread", &CalibrationRound::gemm_rates);
  table_row("Conv2D kernel at 256^3, one thread", &CalibrationRound::conv_gemm_rates);
  row("MaxPool2D forward and gradient, of input", &CalibrationRound::max_pool_bytes_per_s, 1e9,
      "GB/s");
  row("memory bandwidth (a 64 MB copy)", &CalibrationRound::memory_bandwidth, 1e9, "GB/s");
  std::printf(
      "  fitted: alpha %.2f us, overhead per collective %.2f us (+ %.2f us hand-off, at most\n"
      "          %.2f us after a long phase),\n"
      "          bandwidth %.2f GB/s,\n"
      "          GEMM %.2f GFLOP/s, memory %.2f GB/s, devices computing at once %.2f%s\n"
      "          least cost of any collective or exchange (group sync) %.1f us%s,\n"
      "          of a collective in pairs %.1f us, in halves %.1f us\n"
      "  MatMul kernel GFLOP/s at %lld^3 %.1f; with 4 rows %.1f, depth 4 %.1f, 4 columns %.1f\n"
      "  Conv2D kernel (im2col + GEMM) GFLOP/s at %lld^3 %.1f; with 4 rows %.1f, depth 4 %.1f, 4 "
      "columns "
      "%.1f\n",
      c.latency_s * 1e6, c.collective_overhead_s * 1e6, c.in_process.collective_handoff_s * 1e6,
      c.in_process.long_phase_handoff_s * 1e6, c.default_bandwidth / 1e9, c.flops / 1e9,
      c.memory_bandwidth / 1e9, mpi ? n : c.in_process.compute_slots, mpi ? " (MPI: assumed)" : "",
      c.in_process.group_sync_s * 1e6, mpi ? " (MPI: the latency terms instead)" : "",
      c.in_process.pair_sync_s * 1e6, c.in_process.half_sync_s * 1e6,
      static_cast<long long>(g.base), g.base_flops / 1e9, g.Flops(4, g.base, g.base) / 1e9,
      g.Flops(g.base, 4, g.base) / 1e9, g.Flops(g.base, g.base, 4) / 1e9,
      static_cast<long long>(cg.base), cg.base_flops / 1e9, cg.Flops(4, cg.base, cg.base) / 1e9,
      cg.Flops(cg.base, 4, cg.base) / 1e9, cg.Flops(cg.base, cg.base, 4) / 1e9);
  if (o.out.empty()) {
    std::printf("%s\n(--out FILE writes it for plan/train --profile FILE)\n",
                CostModelToJson(c).c_str());
    return kExitOk;
  }
  std::ofstream out(o.out);
  out << CostModelToJson(c) << "\n";
  if (!out) return Fail(kExitBadInput, "cannot write " + o.out);
  std::printf("wrote %s (use: shardscope plan MODEL --profile %s)\n", o.out.c_str(), o.out.c_str());
  return kExitOk;
}

}  // namespace

void AddCalibrateCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* app = root.add_subcommand(
      "calibrate",
      "Measure this machine for the cost model: collective latency and fixed overhead,\n"
      "bandwidth, GEMM throughput and memory bandwidth; write a profile that plan and train\n"
      "read with --profile FILE (without one they use built-in figures).\n"
      "\n"
      "Examples:\n"
      "  shardscope calibrate --out profile.json                 (8 in-process devices, ~5 s)\n"
      "  mpirun -np 4 shardscope calibrate --out mpi4.json        (one device per rank)\n"
      "  shardscope plan samples/models/ffn.yaml --profile profile.json\n"
      "Measured once per run, between the given devices only: links between hosts are not\n"
      "measured apart (calibrate writes one default_bandwidth; give slower axes with the\n"
      "profile's \"axis_bandwidth\": {\"node\": 1.25e9} or plan --device-mesh node=2,local=4\n"
      "--axis-bandwidth node=1.25e9). In-process, it also measures how many device threads\n"
      "compute at once (compute_slots: the GEMM flop/s of all device threads together, their\n"
      "operands filled before the clock starts, over one thread's; 8 threads on 2 cores give\n"
      "about 1.5-2), which the predicted step time divides computation by, and the least any\n"
      "collective costs when every device thread takes part (group_sync_s: a 4-byte\n"
      "all-reduce on all devices; pair_sync_s: the same in pairs, all pairs at once;\n"
      "half_sync_s: in two halves of the devices, both at once, e.g. groups of 4 of 8).\n"
      "It measures the MatMul kernel's rate by shape (gemm_rates: rows, depth and columns\n"
      "each swept from 1 to 256; small GEMMs, as a batch of 4 per device makes, run several\n"
      "times slower), at which the searches price MatMul and BatchMatMul shards, and the\n"
      "Conv2D kernel (im2col and its GEMM) by the shape of that GEMM (conv_gemm_rates).\n"
      "MaxPool2D's forward and gradient kernels, bytes of input per second (kernel_rates).\n"
      "It measures what a collective costs more when the ranks come from computation\n"
      "(collective_handoff_s), in-process and under mpirun, and in-process also after a long\n"
      "phase of computation (long_phase_handoff_s, 256^3 GEMMs on every device): a phase\n"
      "between two collectives starts with the woken device threads on one core, so the\n"
      "searches price a short phase as on one core and a long one at most this much above\n"
      "its price at compute_slots; under mpirun every rank is\n"
      "assumed to have its own core (oversubscribed ranks are not measured yet).\n"
      "\n"
      "On a shared machine another process moves figures by up to 2x for a second or so\n"
      "(the hand-off, one thread's GEMM and kernel rates). Calibrate therefore measures in\n"
      "rounds (--trials, default 15) spread evenly over --duration seconds (default 5): each\n"
      "round measures every collective, the GEMM rate of all device threads together and one\n"
      "thread's GEMM rate once (every third round also the kernels' rate tables, MaxPool2D\n"
      "and the memory bandwidth); each figure is its median over the rounds (one thread's\n"
      "rates: the best round, its undisturbed speed), so a disturbance shorter than half the\n"
      "duration does not move it. The output gives each figure's lowest and highest round\n"
      "beside it. More rounds over a longer duration:\n"
      "  shardscope calibrate --trials 30 --duration 15 --out profile.json\n"
      "Every round's figures as it ends (under mpirun, one thread's rates are measured after\n"
      "the rounds and show as 0 here):\n"
      "  shardscope calibrate --show-rounds\n"
      "How far calibrations move on this machine (figures and predicted steps, repeated):\n"
      "  scripts/calibrate_spread.sh --times 8\n"
      "\n"
      "The profile's fields (docs/cost-model.md):\n" +
          CostProfileFieldsHelp());
  app->add_option("--out", o->out, "Write the profile (JSON) to FILE");
  app->add_option("--devices", o->devices, "In-process devices to measure between (default 8)")
      ->check(CLI::Range(2, 256));
  app->add_option("--repeats", o->repeats,
                  "Repetitions of each small collective within a round (default 30)")
      ->check(CLI::Range(3, 100000));
  app->add_option("--trials", o->trials,
                  "Rounds: each measures every collective and the GEMM rates once; each figure "
                  "is the median over the rounds (default 15)")
      ->check(CLI::Range(1, 1000));
  app->add_option("--duration", o->duration,
                  "Seconds the rounds are spread over (default 5; rounds that take longer run "
                  "back to back)")
      ->check(CLI::Range(0.0, 3600.0));
  app->add_flag("--show-rounds", o->show_rounds,
                "Print every round's figures as it ends (to see a disturbance come and go)");
  commands.push_back({app, [o] { return RunCalibrate(*o); }});
}

}  // namespace shardscope::cli

// The measurements of `shardscope calibrate` (calibration_measure.h): collectives timed
// between device threads or MPI ranks, one thread's GEMM and kernel rates, memory bandwidth.
// The load-sensitive figures are measured in rounds and combined per figure (calibration.h).
#include "shardscope/cost/calibration_measure.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "ops/op_registry.h"
#include "shardscope/communicator.h"

namespace shardscope {
namespace {

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
  const size_t per_rank = kCalibrationGatherBytes / sizeof(float) / static_cast<size_t>(n);
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
CostModel FitAlphaBeta(const CalibrationRound& m, int n) {
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
  const size_t gathered = kCalibrationGatherBytes / sizeof(float) / n * n * sizeof(float);
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

}  // namespace

CostModel FitCalibratedCostModel(const CalibrationRound& m, int n, bool in_process) {
  CostModel c = FitAlphaBeta(m, n);
  if (in_process) {
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
  return c;
}

Result<CalibrationRun> MeasureCalibrationRounds(
    const CalibrationOptions& o, Communicator* mpi_world,
    const std::function<void(int, double, const CalibrationRound&)>& on_round) {
  const bool mpi = mpi_world != nullptr;
  const int n = mpi ? mpi_world->size() : o.devices;
  CalibrationRun run;
  // Rounds evenly spread over o.duration: a disturbance from another process then falls into
  // a few rounds of every figure (calibration.h), not into every measurement of one figure.
  run.rounds.resize(o.trials);
  const auto begin = Clock::now();
  for (int i = 0; i < o.trials; ++i) {
    std::this_thread::sleep_until(begin +
                                  std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(o.duration * i / o.trials)));
    CalibrationRound& round = run.rounds[i];
    Status st;
    if (mpi) {
      st = MeasureCommunication(*mpi_world, o.repeats, &round);
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
    SHARDSCOPE_RETURN_IF_ERROR(st);
    if (!mpi) MeasureThreadRates(i, o.trials, &round);
    if (on_round) on_round(i, Since(begin), round);
  }
  run.seconds = Since(begin);
  // MPI: the other ranks would wait for rank 0 in the next round's barrier, spinning on the
  // cores its kernels run on; rank 0 measures them alone once the others have left.
  if (mpi && mpi_world->rank() == 0) {
    for (int i = 0; i < o.trials; ++i) MeasureThreadRates(i, o.trials, &run.rounds[i]);
  }
  return run;
}

}  // namespace shardscope

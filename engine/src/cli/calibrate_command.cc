// `shardscope calibrate [--out FILE]`: measures this machine's collective latency and
// overhead, link bandwidth, GEMM throughput and memory bandwidth, and writes a cost profile
// that `plan` and `train` read with --profile FILE (cost_model.h). The load-sensitive figures
// are measured in rounds spread over a few seconds and combined per figure (calibration.h).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/usage.h"
#include "shardscope/communicator.h"
#include "shardscope/cost/calibration_measure.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/cost/profile_fields.h"

namespace shardscope::cli {
namespace {

struct CalibrateOptions {
  std::string out;
  int devices = 8;
  int repeats = 30;
  int trials = 15;        // rounds
  double duration = 5.0;  // seconds the rounds are spread over
  bool show_rounds = false;
  bool json = false;  // the fitted profile on stdout, the report on stderr
};

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
  CalibrationOptions measure;
  measure.devices = n;
  measure.repeats = o.repeats;
  measure.trials = o.trials;
  measure.duration = o.duration;
  const auto show = [&](int i, double seconds, const CalibrationRound& round) {
    if (!o.show_rounds || rank != 0) return;
    std::printf(
        "round %2d at %5.2f s: all-reduce 2 ranks %.1f us, %d ranks %.1f us, after "
        "computing %.1f us (a long phase %.1f us); all-gather %.2f ms; GEMM one thread %.1f, "
        "all threads %.1f GFLOP/s\n",
        i, seconds, round.all_reduce_pair_s * 1e6, n, round.all_reduce_all_s * 1e6,
        round.interleaved_s * 1e6, round.interleaved_long_s * 1e6, round.all_gather_all_s * 1e3,
        round.single_gemm_flops / 1e9, round.concurrent_gemm_flops / 1e9);
  };
  auto run = MeasureCalibrationRounds(measure, world.get(), show);
  if (!run.ok()) return Fail(kExitRunFailure, run.status().message());
  if (rank != 0) return kExitOk;
  const double seconds = run->seconds;
  const CalibrationRound m = CombineCalibrationRounds(run->rounds);
  const CalibrationSpread spread = SpreadOfCalibrationRounds(run->rounds);
  const CostModel c = FitCalibratedCostModel(m, n, !mpi);
  StdoutToStderr console;
  if (!o.json) console.Restore();
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
  row(("all-gather of " + std::to_string(kCalibrationGatherBytes >> 20) + " MB on " +
       std::to_string(n) + " ranks")
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
  if (o.json) {
    console.Restore();
    std::printf("%s\n", CostModelToJson(c).c_str());
    if (o.out.empty()) return kExitOk;
  } else if (o.out.empty()) {
    std::printf("%s\n(--out FILE writes it for plan/train --profile FILE)\n",
                CostModelToJson(c).c_str());
    return kExitOk;
  }
  std::ofstream out(o.out);
  out << CostModelToJson(c) << "\n";
  if (!out) return Fail(kExitBadInput, "cannot write " + o.out);
  std::fprintf(o.json ? stderr : stdout, "wrote %s (use: shardscope plan MODEL --profile %s)\n",
               o.out.c_str(), o.out.c_str());
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
  app->add_flag("--json", o->json,
                "Print the fitted profile (JSON, as --out writes it) on stdout and the report on "
                "stderr");
  app->add_flag("--show-rounds", o->show_rounds,
                "Print every round's figures as it ends (to see a disturbance come and go)");
  commands.push_back({app, [o] { return RunCalibrate(*o); }});
}

}  // namespace shardscope::cli

// What one rank holds and does, from a run file: `shardscope inspect RUN --rank R` and the
// GUI's Rank view read it with the same ReadRankSummary, so their figures agree.
//
// Memory (the last recorded step's rank_step: parameters, gradients, optimizer states,
// activations, peak), the parameters with their layouts (SPMD) or the operators placed on it
// (place()), its traffic summed over the steps, and, when train timed steps
// (instruction_span), its spans of one timed step with compute against communication per
// operator kind and per collective, and the slowest instructions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/store/reader.h"
#include "shardscope/store/status.h"

namespace shardscope::store {

// One timed span of the rank, named for a person.
struct RankSpan {
  int64_t ordinal = 0;  // instruction in the SPMD program
  int64_t part = kNone;
  // instruction_span.kind: compute, redistribution, collective, bucket, grad_scatter,
  // param_gather
  std::string kind;
  std::string name;  // operator (compute), collective (the others), "redistribute N"
  std::string text;  // the instruction as the program prints it
  double start_seconds = 0, end_seconds = 0;
  // Communication drawn on its own lane: whole redistributions, gradient buckets and ZeRO's
  // collectives (a redistribution's collectives lie inside it).
  bool communication() const {
    return kind == "redistribution" || kind == "bucket" || kind == "grad_scatter" ||
           kind == "param_gather";
  }
};

// The one collective a span of kind bucket, grad_scatter or param_gather stands for
// ("all-reduce (gradient bucket)", ...); "" for the other kinds. inspect and trace share it.
std::string SpanCollectiveName(const std::string& kind);

struct RankTiming {
  int64_t step = kNone;  // kNone: no timed step
  double span = 0, compute = 0, comm = 0;
  // seconds and count by operator kind (compute) and by collective (redistribution steps
  // and gradient buckets)
  std::map<std::string, std::pair<double, int64_t>> compute_by_kind, collectives;
  std::vector<std::pair<double, std::string>> slowest;  // seconds, instruction text
  std::vector<RankSpan> spans;                          // by start
  std::vector<int64_t> timed_steps;                     // every timed step of the run
};

// One memory row: what it holds and its bytes at the last recorded step.
struct MemoryRow {
  std::string what;      // "parameters", "gradients", "optimizer", "activations", "peak"
  std::string json_key;  // "param_bytes", ...
  int64_t bytes = 0;
};

struct RankSummary {
  RunInfo run;
  int64_t rank = 0;
  bool placed = false;  // place(): rank is a worker
  int64_t steps = 0;    // recorded steps (0: a plan run)
  int64_t last_step = kNone;
  RankStepRecord last;  // its figures at last_step
  double compute_seconds = 0, comm_seconds = 0;
  int64_t bytes_sent = 0, bytes_recv = 0;
  std::vector<TensorRecord> parameters;  // SPMD: a shard of each; placed: its operators'
  std::vector<std::string> operators;    // placed: the forward operators on the worker
  std::vector<SendRecvRecord> crossing;  // placed: transfers from or to the worker
  std::map<int64_t, std::string> tensor_names;
  RankTiming timing;
};

// The memory rows in the order inspect prints them (peak last).
std::vector<MemoryRow> MemoryRows(const RankSummary& summary);

// kNotFound when `rank` is not one of the run's devices. `timed_step` kNone: the last timed
// step; a step that was not timed leaves timing.step kNone.
Result<RankSummary> ReadRankSummary(const RunReader& reader, int64_t rank,
                                    int64_t timed_step = kNone);

// Text (ends with a newline) or JSON, as inspect --rank prints it.
std::string FormatRankSummary(const RankSummary& summary, bool json);
// `timed_step` kNone: the last timed step; another step that was not timed is kNotFound,
// naming the timed ones.
Result<std::string> FormatRankSummary(const RunReader& reader, int64_t rank, bool json = false,
                                      int64_t timed_step = kNone);
// "2, 4, 6" or "2, 4, ... 40 (20 steps)": the timed steps as an error message lists them.
std::string TimedStepsText(const std::vector<int64_t>& steps);

}  // namespace shardscope::store

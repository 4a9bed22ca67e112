// A small run with every record type, for the store's tests, its fuzz seeds and the kill
// helper; and ReadEverything(), which calls every reader accessor (the corrupt-file tests and
// the fuzz target use it to check that no input crashes the reader).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/store/reader.h"
#include "shardscope/store/records.h"
#include "shardscope/store/summary.h"
#include "shardscope/store/writer.h"

namespace shardscope::store::testing {

struct SampleRun {
  RunInfo run;
  std::vector<MeshRecord> meshes;
  std::vector<OperatorRecord> operators;
  std::vector<TensorRecord> tensors;
  std::vector<EdgeRecord> edges;
  std::vector<RedistributionRecord> redistributions;
  std::vector<ProgramRecord> programs;
  std::vector<SendRecvRecord> send_recvs;
  std::vector<StepRecord> steps;
  std::vector<EvaluationRecord> evaluations;
  std::vector<EventRecord> events;
};

inline RunInfo SampleRunInfo() {
  RunInfo run;
  run.name = "ffn";
  run.mode = "train";
  run.search = "sharding_propagation";
  run.devices = 8;
  run.backend = "in-process";
  run.model_path = "samples/models/ffn.yaml";
  run.model_text = "# FFN\nmodel:\n  - dense: {units: 128}\n  - relu\n";
  run.config_json = R"({"lr":0.05,"epochs":3,"batch":64})";
  run.command_line = "shardscope train samples/models/ffn.yaml --devices 8";
  run.shardscope_version = "0.1.0";
  run.versions_json = R"({"compiler":"gcc 12.2"})";
  return run;
}

// A two-layer MLP on a (2,2,2) mesh: forward and backward operators, a redistribution with
// two steps, SPMD programs, a send/receive pair, `steps` training steps on 8 ranks.
inline SampleRun MakeSampleRun(int steps = 5) {
  SampleRun s;
  s.run = SampleRunInfo();
  s.meshes.push_back({0, "main", {2, 2, 2}, {"dp", "sp", "mp"}, {}});
  s.meshes.push_back({1, "flat", {8}, {"all"}, {0, 2, 4, 6, 1, 3, 5, 7}});

  OperatorRecord mm;
  mm.id = 0;
  mm.name = "dense1.matmul";
  mm.scope = "dense1";
  mm.kind = "MatMul";
  mm.mesh_id = 0;
  mm.strategy = "((2,4),(4,1))";
  mm.provenance = "user";
  mm.provenance_detail = "shard() in ffn.yaml line 3";
  mm.cost = 1.5e-3;
  mm.attrs = R"({"transpose_b":false})";
  mm.candidates = {{"((2,4),(4,1))", 1.5e-3, 1.0e-3, 0.5e-3, 4096, "chosen"},
                   {"((8,1),(1,1))", 2.5e-3, 0.9e-3, 1.6e-3, 8192, "data parallel"}};
  OperatorRecord relu;
  relu.id = 1;
  relu.name = "dense1.relu";
  relu.scope = "dense1";
  relu.kind = "Relu";
  relu.mesh_id = 0;
  relu.strategy = "((2,4),)";
  relu.provenance = "propagated";
  relu.provenance_detail = "from dense1.matmul over its output";
  relu.provenance_op = 0;
  relu.cost = 2e-5;
  OperatorRecord mm2;
  mm2.id = 2;
  mm2.name = "dense2.matmul";
  mm2.scope = "dense2";
  mm2.kind = "MatMul";
  mm2.mesh_id = 0;
  mm2.strategy = "((8,1),(1,1))";
  mm2.provenance = "search";
  mm2.search_round = 2;
  mm2.cost = 3e-4;
  mm2.worker = 1;
  mm2.candidates = {{"((8,1),(1,1))", 3e-4, 2e-4, 1e-4, 100, ""}};
  OperatorRecord grad;
  grad.id = 3;
  grad.name = "grad.dense1.matmul.lhs";
  grad.scope = "grad.dense1";
  grad.kind = "MatMul";
  grad.is_backward = true;
  grad.forward_id = 0;
  grad.mesh_id = 0;
  grad.strategy = "((2,1),(1,4))";
  grad.provenance = "derived";
  grad.provenance_op = 0;
  s.operators = {mm, relu, mm2, grad};

  s.tensors.push_back({0, "x", {64, 784}, "f32", "input", kNone, 0, "[dp | -]", 0});
  s.tensors.push_back({1, "dense1.w", {784, 128}, "f32", "parameter", kNone, 0, "[- | mp]", 0});
  s.tensors.push_back({2, "dense1.matmul:0", {64, 128}, "f32", "activation", 0, 0, "P(sp)", 0});
  s.tensors.push_back({3, "dense1.relu:0", {64, 128}, "f32", "activation", 1, 0, "[dp | mp]", 0});
  s.tensors.push_back({4, "grad.x", {64, 784}, "f32", "gradient", 3, 0, "[dp | -]", 1});

  s.edges.push_back({0, kNone, 0, 0, 0, "[dp | sp]", 0});
  s.edges.push_back({1, kNone, 0, 0, 1, "[sp | mp]", 0});
  s.edges.push_back({2, 0, 0, 1, 0, "[dp | mp]", 0});
  s.edges.push_back({3, 1, 0, 2, 0, "[dp.sp.mp | -]", 0});
  s.edges.push_back({3, 1, 0, 3, 0, "[dp | mp]", 0});

  RedistributionRecord r;
  r.id = 0;
  r.tensor_id = 2;
  r.consumer_op = 1;
  r.consumer_input = 0;
  r.from_layout = "P(sp)";
  r.from_mesh_id = 0;
  r.to_layout = "[dp | mp]";
  r.to_mesh_id = 0;
  r.plan_mesh_id = 0;
  r.reason = "dense1.relu needs its input reduced over sp";
  r.bytes = 8192;
  r.lower_bound_bytes = 8192;
  r.bytes_total = 65536;
  r.lower_bound_total = 65536;
  r.lower_bound_per_rank = std::vector<int64_t>(8, 8192);
  r.predicted_seconds = 2.5e-5;
  RedistStepRecord rs;
  rs.ordinal = 0;
  rs.kind = "reduce-scatter";
  rs.axes = {1};
  rs.axis_names = {"sp"};
  rs.dim = 1;
  rs.groups = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
  rs.bytes_sent_max = 8192;
  rs.bytes_recv_max = 8192;
  rs.bytes_sent = std::vector<int64_t>(8, 8192);
  rs.bytes_recv = std::vector<int64_t>(8, 8192);
  rs.messages = 1;
  rs.seconds = 2e-5;
  rs.layout_after = "[dp | sp.mp]";
  rs.reason = "reduce the partial sum over sp";
  RedistStepRecord rs2;
  rs2.ordinal = 1;
  rs2.kind = "all-to-all-v";
  rs2.axes = {1, 2};
  rs2.axis_names = {"sp", "mp"};
  rs2.dim = -1;
  rs2.groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  rs2.bytes_sent = {0, 1, 2, 3, 4, 5, 6, 7};
  rs2.bytes_recv = {7, 6, 5, 4, 3, 2, 1, 0};
  rs2.seconds = 5e-6;
  rs2.layout_after = "[dp | mp]";
  rs2.reason = "move the split to mp";
  rs2.transfers = {{0, 1, {0, 64}, {32, 32}}, {2, 3, {32, 0}, {32, 64}}};
  rs2.zero_ranks = {5, 7};
  r.steps = {rs, rs2};
  RedistributionRecord g;
  g.id = 1;
  g.tensor_id = 4;
  g.is_backward = true;
  g.from_layout = "P(dp)";
  g.from_mesh_id = 1;
  g.to_layout = "[- | -]";
  g.to_mesh_id = 1;
  g.reason = "gradient reduction over dp";
  g.bytes = 4000;
  g.lower_bound_bytes = 3000;
  g.byte_optimal = false;
  g.predicted_seconds = 1e-4;
  s.redistributions = {r, g};

  ProgramRecord p;
  p.rank = kNone;
  p.text = "compute dense1.matmul\nredistribute #0\ncompute dense1.relu\n";
  p.instructions = {{0, "compute", 0, kNone, kNone, kNone, 0, "dense1.matmul"},
                    {1, "redistribute", kNone, 0, 2, kNone, 8192, "P(sp) -> [dp | mp]"},
                    {2, "compute", 1, kNone, kNone, kNone, 0, "dense1.relu"}};
  ProgramRecord w1;
  w1.rank = 1;
  w1.role = "head";
  w1.text = "recv 3 from 0\ncompute dense2.matmul\n";
  w1.instructions = {{0, "recv", kNone, kNone, 3, 0, 32768, "recv dense1.relu:0"},
                     {1, "compute", 2, kNone, kNone, kNone, 0, "dense2.matmul"}};
  s.programs = {p, w1};
  s.send_recvs.push_back({1, 3, 0, 1, 1, 2, 32768, false});
  s.send_recvs.push_back({2, 3, 1, 0, 2, 1, 32768, true});

  for (int i = 0; i < steps; ++i) {
    StepRecord st;
    st.step = i;
    st.epoch = i / 3;
    st.loss = 2.3 / (1.0 + i);
    st.seconds = 0.01 + 0.001 * i;
    st.time = 1.7e9 + i;
    for (int k = 0; k < 8; ++k) {
      st.ranks.push_back({k, 0.005 + 1e-4 * k, 0.002, 1000 + k, 2000 + k, 400000, 400000, 800000,
                          100000 + i, 1700000 + i});
    }
    s.steps.push_back(std::move(st));
  }
  if (steps > 1) s.steps[1].loss = std::nan("");  // a diverged step reads back as NaN

  s.evaluations.push_back({1, 2, 0, "test", 0.5, 0.91, 10000, 1.25, 1.7e9 + 10});
  s.evaluations.push_back({2, 4, 1, "test", 0.4, std::nan(""), 10000, 1.5, 1.7e9 + 20});
  s.events.push_back({1, 1.7e9, "info", kNone, kNone, "search", "sharding_propagation: 4 ops"});
  s.events.push_back({2, 1.7e9 + 1, "warning", 3, 5, "train", "slow step\non rank 5 \"x\" \t"});
  s.events.push_back({3, 1.7e9 + 2, "error", 4, kNone, "train", std::string("nul\0byte", 8)});
  return s;
}

// Writes everything in `s` (one transaction for the plan, one per step).
inline Status WriteSample(RunWriter& w, const SampleRun& s) {
  for (const auto& m : s.meshes) {
    if (Status st = w.AddMesh(m); !st.ok()) return st;
  }
  for (const auto& o : s.operators) {
    if (Status st = w.AddOperator(o); !st.ok()) return st;
  }
  for (const auto& t : s.tensors) {
    if (Status st = w.AddTensor(t); !st.ok()) return st;
  }
  for (const auto& e : s.edges) {
    if (Status st = w.AddEdge(e); !st.ok()) return st;
  }
  for (const auto& r : s.redistributions) {
    if (Status st = w.AddRedistribution(r); !st.ok()) return st;
  }
  for (const auto& p : s.programs) {
    if (Status st = w.AddProgram(p); !st.ok()) return st;
  }
  for (const auto& p : s.send_recvs) {
    if (Status st = w.AddSendRecv(p); !st.ok()) return st;
  }
  for (const auto& e : s.events) {
    if (Status st = w.AddEvent(e); !st.ok()) return st;
  }
  if (Status st = w.Commit(); !st.ok()) return st;
  for (const auto& step : s.steps) {
    if (Status st = w.AddStep(step); !st.ok()) return st;
    if (Status st = w.Commit(); !st.ok()) return st;
  }
  for (const auto& e : s.evaluations) {
    if (Status st = w.AddEvaluation(e); !st.ok()) return st;
  }
  return w.Commit();
}

// Calls every accessor and both summaries; returns how many failed (damaged files fail some,
// which is fine; crashing is not).
inline int ReadEverything(const RunReader& r) {
  int failures = 0;
  const auto count = [&](const auto& result) {
    if (!result.ok()) ++failures;
  };
  count(r.Run());
  (void)r.IsLive();
  count(r.Counts());
  count(r.Meshes());
  count(r.Operators());
  count(r.Operators(false));
  count(r.Operator(0));
  count(r.OperatorsNamed("dense1.matmul"));
  count(r.OperatorsInScope("dense1"));
  count(r.Tensors());
  count(r.Tensor(2));
  count(r.Edges());
  count(r.EdgesInto(1));
  count(r.EdgesFrom(1));
  count(r.EdgesOfTensor(3));
  count(r.Redistributions());
  count(r.Redistribution(0));
  count(r.RedistributionsForOperator(1));
  count(r.RedistributionsOfTensor(2));
  count(r.Programs());
  count(r.SendRecvs());
  count(r.Steps(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), true));
  count(r.RankSeries(0));
  count(r.RankTotals());
  count(r.Evaluations());
  count(r.Events());
  count(r.Events(1, 1));
  if (!r.Check().ok()) ++failures;
  count(FormatRunSummary(r));
  count(RunSummaryJson(r));
  return failures;
}

}  // namespace shardscope::store::testing

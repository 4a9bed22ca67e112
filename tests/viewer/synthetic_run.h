// A synthetic run file written with store's RunWriter, for the viewer and GUI tests and the
// viewer benchmark: `num_ops` forward operators in scopes of `ops_per_scope` (chains), each
// with three candidates and a worker, their output tensors with layouts on a (dp,sp,mp) mesh
// of 8 ranks, a redistribution (one or two steps, one irregular) on every fifth edge, a
// send/receive pair where consecutive operators sit on different workers, and `steps`
// training steps on 8 ranks. Everything is derived from the indices: the same arguments give
// the same file.
#pragma once

#include <cmath>
#include <memory>
#include <string>

#include "shardscope/store/writer.h"

namespace shardscope::viewer::testing {

struct SyntheticRunOptions {
  int num_ops = 24;
  int ops_per_scope = 6;
  int steps = 4;
  int workers = 4;  // 0: no place() workers, no send/recv
  // > 0 (with workers > 0): pipeline spans of a GPipe schedule, forward 1 ms and backward
  // 2 ms per micro-batch and worker, for every step.
  int micro_batches = 0;
  // Backward operators "grad.<name>.dx" in reverse order, each reading the previous one.
  bool backward = false;
};

inline store::Status WriteSyntheticRun(const std::string& path, const SyntheticRunOptions& o = {}) {
  store::RunInfo info;
  info.name = "synthetic";
  info.mode = "train";
  info.search = "semi_auto";
  info.devices = 8;
  info.backend = "in-process";
  store::RunWriterOptions options;
  options.overwrite = true;
  auto writer_or = store::RunWriter::Create(path, info, options);
  if (!writer_or.ok()) return writer_or.status();
  auto writer = std::move(writer_or).value();
  store::Status s = writer->AddMesh({0, "main", {2, 2, 2}, {"dp", "sp", "mp"}, {}});
  if (!s.ok()) return s;
  s = writer->AddMesh({1, "flat", {8}, {"all"}, {0, 4, 2, 6, 1, 5, 3, 7}});
  if (!s.ok()) return s;
  const char* strategies[] = {"((2,4),(4,1))", "((8,1),)", "((1,8),(8,1))"};
  const char* layouts[] = {"[dp | mp]", "[mp | sp.dp]", "[dp | -] P(mp)"};
  // Input tensor (no producer).
  store::TensorRecord input;
  input.id = 0;
  input.name = "x";
  input.shape = {8, 16};
  input.kind = "input";
  input.layout = "[dp | -]";
  input.mesh_id = 0;
  s = writer->AddTensor(input);
  int64_t redist_id = 0;
  for (int i = 0; i < o.num_ops && s.ok(); ++i) {
    const int scope = i / o.ops_per_scope;
    store::OperatorRecord op;
    op.id = i;
    op.scope = "block" + std::to_string(scope);
    op.name = op.scope + ".op" + std::to_string(i % o.ops_per_scope);
    op.kind = i % 2 ? "ReLU" : "MatMul";
    op.mesh_id = 0;
    op.strategy = strategies[i % 3];
    op.provenance = i % 3 == 0 ? "user" : "search";
    op.provenance_detail = i % 3 == 0 ? "given in the model file" : "cheapest of 3 candidates";
    op.search_round = i % 3 == 0 ? store::kNone : 1;
    op.cost = 1e-4 * (1 + i % 5);
    op.worker = o.workers > 0 ? (i / 2) % o.workers : store::kNone;
    for (int c = 0; c < 3; ++c) {
      store::CandidateRecord cand;
      cand.strategy = strategies[(i + c) % 3];
      cand.cost = op.cost * (1 + c);
      cand.compute_seconds = cand.cost * 0.7;
      cand.comm_seconds = cand.cost * 0.3;
      cand.memory_bytes = 4096 * (1 + c);
      cand.note = c == 0 ? "chosen" : "needs a redistribution";
      op.candidates.push_back(cand);
    }
    s = writer->AddOperator(op);
    if (!s.ok()) break;
    store::TensorRecord t;
    t.id = i + 1;
    t.name = op.name + ":0";
    t.shape = {8, 16};
    t.kind = "activation";
    t.producer_op = i;
    t.layout = layouts[i % 3];
    t.mesh_id = 0;
    s = writer->AddTensor(t);
    if (!s.ok()) break;
    store::EdgeRecord e;
    e.tensor_id = i;  // the previous operator's output (tensor 0: the input)
    e.src_op = i == 0 ? store::kNone : i - 1;
    e.dst_op = i;
    e.dst_input = 0;
    e.layout = i % 5 == 4 ? "[dp | -]" : (i == 0 ? "[dp | -]" : layouts[(i - 1) % 3]);
    e.mesh_id = 0;
    s = writer->AddEdge(e);
    if (!s.ok()) break;
    if (i % 5 == 4) {
      store::RedistributionRecord r;
      r.id = redist_id++;
      r.tensor_id = i;
      r.consumer_op = i;
      r.consumer_input = 0;
      r.from_layout = layouts[(i - 1) % 3];
      r.from_mesh_id = 0;
      r.to_layout = "[dp | -]";
      r.to_mesh_id = 0;
      r.plan_mesh_id = 0;
      r.reason = op.name + " needs [dp | -]";
      store::RedistStepRecord a;
      a.ordinal = 0;
      a.kind = "all-to-all";
      a.axes = {2};
      a.axis_names = {"mp"};
      a.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
      a.bytes_sent_max = a.bytes_recv_max = 128;
      a.bytes_sent = a.bytes_recv = std::vector<int64_t>(8, 128);
      a.messages = 8;
      a.seconds = 1e-5;
      a.layout_after = "[dp.mp | -]";
      a.transfers = {{0, 1, {0, 8}, {2, 8}}, {1, 0, {2, 0}, {2, 8}}};
      store::RedistStepRecord b = a;
      b.ordinal = 1;
      b.kind = "all-gather";
      b.transfers.clear();
      b.layout_after = "[dp | -]";
      r.steps = {a, b};
      r.bytes = 256;
      r.lower_bound_bytes = 192;
      r.bytes_total = 2048;
      r.lower_bound_total = 1536;
      r.lower_bound_per_rank = std::vector<int64_t>(8, 192);
      r.byte_optimal = false;
      r.predicted_seconds = 2e-5;
      s = writer->AddRedistribution(r);
      if (!s.ok()) break;
    }
    if (o.workers > 0 && i > 0 && (i / 2) % o.workers != ((i - 1) / 2) % o.workers) {
      store::SendRecvRecord sr;
      sr.tensor_id = i;
      sr.src_rank = ((i - 1) / 2) % o.workers;
      sr.dst_rank = (i / 2) % o.workers;
      sr.src_op = i - 1;
      sr.dst_op = i;
      sr.bytes = 512;
      s = writer->AddSendRecv(sr);
    }
  }
  for (int j = 0; o.backward && j < o.num_ops && s.ok(); ++j) {
    const int i = o.num_ops - 1 - j;  // its forward operator
    const int scope = i / o.ops_per_scope;
    store::OperatorRecord op;
    op.id = o.num_ops + j;
    op.name =
        "grad.block" + std::to_string(scope) + ".op" + std::to_string(i % o.ops_per_scope) + ".dx";
    op.scope = op.name.substr(0, op.name.rfind('.'));
    op.kind = i % 2 ? "ReLUGrad" : "MatMul";
    op.is_backward = true;
    op.forward_id = i;
    op.mesh_id = 0;
    op.strategy = strategies[i % 3];
    op.provenance = "derived";
    s = writer->AddOperator(op);
    if (!s.ok() || j == 0) continue;
    store::EdgeRecord e;
    e.tensor_id = i + 1;  // stands for the gradient flowing back
    e.src_op = op.id - 1;
    e.dst_op = op.id;
    e.layout = "[dp | -]";
    e.mesh_id = 0;
    s = writer->AddEdge(e);
  }
  if (!s.ok()) return s;
  s = writer->Commit();
  for (int k = 0; k < o.steps && s.ok(); ++k) {
    store::StepRecord step;
    step.step = k;
    step.loss = 2.3 * std::exp(-0.3 * k);
    step.seconds = 0.01;
    for (int r = 0; r < 8; ++r) {
      store::RankStepRecord rs;
      rs.rank = r;
      rs.compute_seconds = 0.004 + 0.0001 * r;
      rs.comm_seconds = 0.002;
      rs.bytes_sent = rs.bytes_recv = 1000 * (r + 1);
      rs.peak_bytes = 100000 + 1000 * r;
      rs.param_bytes = 50000;
      step.ranks.push_back(rs);
    }
    s = writer->AddStep(step);
    for (int w = 0; w < o.workers && o.micro_batches > 0 && s.ok(); ++w) {
      const int p = o.workers, m = o.micro_batches;
      for (int mb = 0; mb < m && s.ok(); ++mb) {
        store::PipelineSpanRecord forward;
        forward.step = k;
        forward.rank = w;
        forward.micro_batch = mb;
        forward.phase = "forward";
        forward.start_seconds = 0.001 * (w + mb);
        forward.end_seconds = forward.start_seconds + 0.001;
        forward.compute_seconds = 0.001;
        s = writer->AddPipelineSpan(forward);
        store::PipelineSpanRecord backward = forward;
        backward.phase = "backward";
        backward.start_seconds = 0.001 * (p + m - 1) + 0.002 * ((p - 1 - w) + mb);
        backward.end_seconds = backward.start_seconds + 0.002;
        backward.compute_seconds = 0.002;
        if (s.ok()) s = writer->AddPipelineSpan(backward);
      }
    }
    if (s.ok()) s = writer->Commit();
  }
  if (!s.ok()) return s;
  return writer->Finish(store::RunStatus::kCompleted, "");
}

}  // namespace shardscope::viewer::testing

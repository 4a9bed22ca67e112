// A run file at real size for the GUI tests, written with store's RunWriter: `devices` ranks
// on a mesh (a=32, b=devices/32), `parameters` parameters with layouts, `steps` training
// steps with every rank's figures, one SPMD program whose instructions every rank timed in
// every `timing_every`-th step, and redistributions with GPT-style long names (two steps on
// rank groups of the whole mesh). Everything is derived from the indices: the same options
// give the same file.
#pragma once

#include <string>

#include "shardscope/store/writer.h"

namespace shardscope_gui_test {

struct LargeRunOptions {
  int64_t devices = 1024;  // a multiple of 32
  int parameters = 400;
  int steps = 60;
  int timing_every = 20;
  int instructions = 80;
  int redistributions = 6;
};

inline shardscope::store::Status WriteLargeRun(const std::string& path,
                                               const LargeRunOptions& o = {}) {
  namespace store = shardscope::store;
  store::RunInfo info;
  info.name = "large";
  info.mode = "train";
  info.search = "semi_auto";
  info.devices = o.devices;
  info.backend = "mpi";
  store::RunWriterOptions options;
  options.overwrite = true;
  auto writer_or = store::RunWriter::Create(path, info, options);
  if (!writer_or.ok()) return writer_or.status();
  auto writer = std::move(writer_or).value();
  const int64_t b = o.devices / 32;
  store::Status s = writer->AddMesh({0, "main", {32, b}, {"a", "b"}, {}});
  // One operator per parameter (a matmul reading it), its output an activation.
  for (int i = 0; i < o.parameters && s.ok(); ++i) {
    store::OperatorRecord op;
    op.id = i;
    op.scope = "h." + std::to_string(i / 8) + ".mlp";
    op.name = op.scope + ".c_fc" + std::to_string(i % 8) + ".MatMul";
    op.kind = "MatMul";
    op.mesh_id = 0;
    op.strategy = "((32,1),(1," + std::to_string(b) + "))";
    op.provenance = "search";
    s = writer->AddOperator(op);
    store::TensorRecord w;
    w.id = 2 * i;
    w.name = op.scope + ".c_fc" + std::to_string(i % 8) + ".weight";
    w.shape = {768, 3072};
    w.kind = "parameter";
    w.layout = i % 2 ? "[a | b]" : "[- | b]";
    w.mesh_id = 0;
    if (s.ok()) s = writer->AddTensor(w);
    store::TensorRecord out = w;
    out.id = 2 * i + 1;
    out.name = op.name + "_output_0/transposed_for_attention_heads";
    out.shape = {1024, 3072};
    out.kind = "activation";
    out.producer_op = i;
    if (s.ok()) s = writer->AddTensor(out);
  }
  // Redistributions of long-named tensors: an all-to-all over a, then an all-gather along b.
  for (int i = 0; i < o.redistributions && s.ok(); ++i) {
    store::RedistributionRecord r;
    r.id = i;
    r.tensor_id = 2 * i + 1;
    r.consumer_op = i + 1;
    r.consumer_input = 0;
    r.from_layout = "[a | b]";
    r.from_mesh_id = r.to_mesh_id = r.plan_mesh_id = 0;
    r.to_layout = "[b | -]";
    r.reason = "the consumer needs [b | -]";
    store::RedistStepRecord a2a;
    a2a.ordinal = 0;
    a2a.kind = "all-to-all";
    a2a.axes = {0};
    a2a.axis_names = {"a"};
    a2a.groups = store::RankGroups::Grid(0, {{32, b}}, {{b, 1}});
    a2a.layout_after = "[a.b | -]";
    a2a.mesh_id = 0;
    a2a.bytes_sent = a2a.bytes_recv = std::vector<int64_t>(o.devices, 3072 * 4 * 31);
    a2a.bytes_sent_max = a2a.bytes_recv_max = 3072 * 4 * 31;
    store::RedistStepRecord gather = a2a;
    gather.ordinal = 1;
    gather.kind = "all-gather";
    gather.axes = {1};
    gather.axis_names = {"b"};
    gather.groups = store::RankGroups::Grid(0, {{b, 1}}, {{32, b}});
    gather.layout_after = "[b | -]";
    r.steps = {a2a, gather};
    r.bytes = 2 * a2a.bytes_sent_max;
    r.lower_bound_bytes = a2a.bytes_sent_max;
    r.lower_bound_per_rank = std::vector<int64_t>(o.devices, r.lower_bound_bytes);
    s = writer->AddRedistribution(r);
  }
  // The SPMD program: compute instructions with a collective every fourth.
  store::ProgramRecord program;
  for (int k = 0; k < o.instructions; ++k) {
    store::InstructionRecord in;
    in.ordinal = k;
    in.kind = k % 4 == 3 ? "redistribute" : "compute";
    in.op_id = k % o.parameters;
    if (k % 4 == 3) in.redistribution_id = k % o.redistributions;
    in.text = (k % 4 == 3 ? "redistribute " : "compute ") + std::to_string(k);
    program.instructions.push_back(in);
  }
  if (s.ok()) s = writer->AddProgram(program);
  if (s.ok()) s = writer->Commit();
  for (int k = 0; k < o.steps && s.ok(); ++k) {
    store::StepRecord step;
    step.step = k;
    step.loss = 2.0 / (1 + k);
    step.seconds = 0.05;
    for (int64_t r = 0; r < o.devices; ++r) {
      store::RankStepRecord rs;
      rs.rank = r;
      rs.compute_seconds = 0.03 + 1e-6 * static_cast<double>(r);
      rs.comm_seconds = 0.01 + 1e-7 * static_cast<double>(k);
      rs.bytes_sent = rs.bytes_recv = 1000 * (r + 1);
      rs.param_bytes = 4000000 + r;
      rs.grad_bytes = 4000000 + 2 * r;
      rs.optimizer_bytes = 8000000;
      rs.activation_bytes = 1000000 + 1000 * k + r;
      rs.peak_bytes = rs.param_bytes + rs.grad_bytes + rs.optimizer_bytes + rs.activation_bytes;
      step.ranks.push_back(rs);
    }
    s = writer->AddStep(step);
    for (int64_t r = 0; s.ok() && k % o.timing_every == 0 && r < o.devices; ++r) {
      for (int i = 0; i < o.instructions && s.ok(); ++i) {
        store::InstructionSpanRecord span;
        span.step = k;
        span.rank = r;
        span.ordinal = i;
        span.kind = i % 4 == 3 ? "redistribution" : "compute";
        span.start_seconds = 1e-4 * i;
        span.end_seconds = span.start_seconds + 1e-4 * (1 + (i + r + k) % 3) / 3;
        s = writer->AddInstructionSpan(span);
      }
    }
    if (s.ok()) s = writer->Commit();
  }
  if (!s.ok()) return s;
  return writer->Finish(store::RunStatus::kCompleted, "");
}

}  // namespace shardscope_gui_test

// What the partitioner plans for the seeds' configurations: where redistributions go,
// which collectives they use, and why.
#include <gtest/gtest.h>

#include <set>

#include "law.h"

#include "shardscope/autodiff.h"
#include "shardscope/communicator.h"
#include "shardscope/data.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/model_file.h"
#include "shardscope/nn.h"
#include "shardscope/partition.h"

namespace shardscope {
namespace {

struct Planned {
  ModelGraph model;
  DistProgram program;
};

Planned PlanFor(ModelGraph model, int devices,
                const std::map<std::string, DeviceMesh>& meshes = {}) {
  Planned p;
  auto grads = BuildBackward(model.graph, model.loss, model.graph.Parameters());
  EXPECT_TRUE(grads.ok()) << grads.status().message();
  TrainingValues tv{model.loss, grads->wrt, grads->grads};
  PartitionOptions o;
  o.devices = devices;
  o.meshes = meshes;
  auto program = Partition(model.graph, tv, o);
  EXPECT_TRUE(program.ok()) << program.status().message();
  p.model = std::move(model);
  if (program.ok()) p.program = std::move(*program);
  return p;
}

// The redistributions that feed `consumer` (a node name), in program order.
std::vector<const DistInstr*> FeedsOf(const Planned& p, const std::string& consumer) {
  std::vector<const DistInstr*> out;
  const NodeId id = p.model.graph.FindNode(consumer);
  for (const DistInstr& c : p.program.instrs) {
    if (c.kind != DistInstr::Kind::kCompute || c.node != id) continue;
    for (int v : c.inputs) {
      for (const DistInstr& r : p.program.instrs) {
        if (r.kind == DistInstr::Kind::kRedistribute && r.outputs[0] == v) out.push_back(&r);
      }
    }
  }
  return out;
}

ModelGraph FromFile(const std::string& name, std::map<std::string, DeviceMesh>* meshes = nullptr) {
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name);
  EXPECT_TRUE(mf.ok()) << mf.status().message();
  if (meshes) {
    for (const auto& [n, text] : mf->parallel().meshes) (*meshes)[n] = ParseMeshExpr(text).value();
  }
  auto m = mf->Build(mf->training().batch);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(*m);
}

// A model file in which relu0 has two readers, matmul_a and matmul_b, with `parallel` (the
// lines after "parallel:"'s mode and devices) deciding their strategies.
std::string TwoReaders(const std::string& name, int batch, const std::string& parallel) {
  return "name: " + name + R"(
input: {shape: [16]}
classes: 8
parameters:
  wa: {shape: [16, 8], init: normal}
  wb: {shape: [16, 8], init: normal}
operators:
  - relu0: {op: ReLU, inputs: [x]}
  - matmul_a: {op: MatMul, inputs: [relu0, wa]}
  - matmul_b: {op: MatMul, inputs: [relu0, wb]}
  - sum: {op: Add, inputs: [matmul_a, matmul_b]}
output: sum
loss: softmax_cross_entropy
optimizer: {type: sgd, lr: 0.01}
data: {dataset: synthetic, synthetic_size: 64}
training: {batch: )" +
         std::to_string(batch) + R"(, epochs: 1, seed: 1}
parallel:
  mode: semi_auto
  devices: 8)" +
         parallel;
}

// Two readers want relu0's output replicated, on meshes with other axis names: the same
// blocks on the same ranks, so one gather serves both (not one gather per reader).
TEST(Plans, OneCopyServesReadersWantingTheSameBlocksOnDifferentMeshes) {
  const std::string text = TwoReaders("two_meshes", 8, R"(
  meshes:
    line: Layout((8,), ("tp",))
    grid: Layout((2, 4), ("a", "b"))
  strategies:
    relu0: ((8, 1),)
    matmul_a: (line("None", "None"), line("None", "tp"))
    matmul_b: (grid("None", "None"), grid("None", ("a", "b")))
)");
  auto mf = ParseModelText(text, "two_meshes.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  std::map<std::string, DeviceMesh> meshes;
  for (const auto& [n, t] : mf->parallel().meshes) meshes[n] = ParseMeshExpr(t).value();
  auto m = mf->Build(8);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Planned p = PlanFor(std::move(*m), 8, meshes);
  const ValueId relu0 = p.model.graph.node(p.model.graph.FindNode("relu0")).outputs[0];
  int gathers_of_relu0 = 0;
  for (const DistInstr& in : p.program.instrs) {
    if (in.kind == DistInstr::Kind::kRedistribute &&
        p.program.values[in.inputs[0]].global == relu0) {
      ++gathers_of_relu0;
    }
  }
  EXPECT_EQ(gathers_of_relu0, 1) << p.program.ToText(p.model.graph);
  // Both MatMuls read that one copy.
  std::set<int> read_by;
  for (const char* name : {"matmul_a", "matmul_b"}) {
    const NodeId id = p.model.graph.FindNode(name);
    for (const DistInstr& c : p.program.instrs) {
      if (c.kind == DistInstr::Kind::kCompute && c.node == id) read_by.insert(c.inputs[0]);
    }
  }
  EXPECT_EQ(read_by.size(), 1u);
}

// relu0's columns are split; matmul_a gathers it whole, and matmul_b, wanting its rows split,
// is then served by a local slice of that whole copy instead of a second exchange from the
// home (basic_blocks_level1 redistributed block1.gelu twice). The law still holds.
TEST(Plans, ALaterReaderIsSlicedFromAnEarlierWholeCopy) {
  const std::string text = TwoReaders("sliced_from_copy", 16, R"(
  strategies:
    relu0: ((1, 8),)
    matmul_a: ((1, 1), (1, 8))
    matmul_b: ((8, 1), (1, 1))
)");
  auto mf = ParseModelText(text, "sliced_from_copy.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto m = mf->Build(16);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Planned p = PlanFor(std::move(*m), 8);
  const ValueId relu0 = p.model.graph.node(p.model.graph.FindNode("relu0")).outputs[0];
  const std::vector<const DistInstr*> feeds_a = FeedsOf(p, "matmul_a");
  const std::vector<const DistInstr*> feeds_b = FeedsOf(p, "matmul_b");
  ASSERT_FALSE(feeds_a.empty()) << p.program.ToText(p.model.graph);
  ASSERT_FALSE(feeds_b.empty()) << p.program.ToText(p.model.graph);
  const DistInstr& gather = *feeds_a[0];
  const DistInstr& slice = *feeds_b[0];
  EXPECT_EQ(p.program.values[gather.inputs[0]].global, relu0);
  EXPECT_EQ(gather.inputs[0], p.program.home[relu0]);
  EXPECT_EQ(slice.inputs[0], gather.outputs[0]) << p.program.ToText(p.model.graph);
  EXPECT_EQ(slice.plan->planned_bytes, 0);
  for (const RedistStep& step : slice.plan->steps)
    EXPECT_EQ(step.kind, RedistStep::Kind::kLocalSlice) << slice.plan->ToString();
  EXPECT_NE(slice.reason.find("its copy for an earlier reader"), std::string::npos) << slice.reason;

  const testing_law::BuildFn build = [&]() { return mf->Build(16); };
  const Status law = testing_law::CheckLaw(build, MakeSyntheticDataset(64, {16}, 8, 3), 16, 8);
  EXPECT_TRUE(law.ok()) << law.message();
}

TEST(Plans, Seed002FourDevicesNeedsExactlyOneAllGatherBetweenTheMatMuls) {
  Planned p = PlanFor(FromFile("matmul_allgather.yaml"), 4);
  auto feeds = FeedsOf(p, "matmul2");
  ASSERT_EQ(feeds.size(), 1u);
  const RedistPlan& plan = *feeds[0]->plan;
  ASSERT_EQ(plan.steps.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.steps[0].kind, RedistStep::Kind::kAllGather) << plan.ToString();
  EXPECT_NE(feeds[0]->reason.find("matmul2 needs"), std::string::npos) << feeds[0]->reason;
  EXPECT_NE(feeds[0]->reason.find("matmul1 gives"), std::string::npos) << feeds[0]->reason;
}

class Mlp2 : public nn::Module {
 public:
  Mlp2() : nn::Module("") {}
  nn::Dense dense1{"dense1", 16, 64, false};
  nn::Dense dense2{"dense2", 64, 8, false};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override { return dense2(b, dense1(b, x)); }
};

TEST(Plans, MegatronMlpHasNoRedistributionBetweenAndOneAllReduceAfter) {
  Mlp2 net;
  net.dense1.matmul.shard("((1,1),(1,4))");  // columns
  net.dense2.matmul.shard("((1,4),(4,1))");  // rows
  auto model = nn::BuildClassifier(net, {16}, 8);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Planned p = PlanFor(std::move(*model), 4);
  EXPECT_TRUE(FeedsOf(p, "dense2.matmul").empty()) << p.program.ToText(p.model.graph);
  // Forward: the only redistribution after dense2.matmul is the all-reduce of its partial sum.
  auto after = FeedsOf(p, "loss");
  ASSERT_EQ(after.size(), 1u) << p.program.ToText(p.model.graph);
  const RedistPlan& plan = *after[0]->plan;
  int reductions = 0;
  for (const RedistStep& s : plan.steps) {
    reductions +=
        s.kind == RedistStep::Kind::kAllReduce || s.kind == RedistStep::Kind::kReduceScatter;
  }
  EXPECT_EQ(reductions, 1) << plan.ToString();
  EXPECT_EQ(plan.CountSteps(RedistStep::Kind::kAllGather), 0) << plan.ToString();
  // No forward redistribution other than that one and the input's.
  int forward = 0;
  for (const DistInstr& i : p.program.instrs) {
    if (i.kind == DistInstr::Kind::kCompute && p.model.graph.node(i.node).is_backward) break;
    forward += i.kind == DistInstr::Kind::kRedistribute;
  }
  EXPECT_EQ(forward, 1) << p.program.ToText(p.model.graph);
}

// Megatron's MLP on tokens ([batch, positions, width] · [width, 4·width]) over 2 × 4
// devices: the backward products keep the forward's batch split (they once gathered the
// whole batch: their gradient operand, made on a mesh of other axis names, was not
// recognised as the gradient of the forward's output).
TEST(Plans, BackwardProductsOfABatchedMegatronMlpKeepTheBatchSplit) {
  const std::string text = R"(name: token_mlp
input: {shape: [4, 16]}
classes: 8
parameters:
  w1: {shape: [16, 64], init: normal}
  w2: {shape: [64, 16], init: normal}
  w3: {shape: [64, 8], init: normal}
operators:
  - fc1: {op: MatMul, inputs: [x, w1]}
  - gelu: {op: GeLU}
  - fc2: {op: MatMul, inputs: [gelu, w2]}
  - flat: {op: Reshape, shape: [-1, 64]}
  - head: {op: MatMul, inputs: [flat, w3]}
loss: softmax_cross_entropy
optimizer: {type: sgd, lr: 0.01}
data: {dataset: synthetic, synthetic_size: 64}
training: {batch: 8, epochs: 1, seed: 1}
parallel:
  mode: semi_auto
  devices: 8
  strategies:
    fc1: ((2, 1, 1), (1, 4))
    fc2: ((2, 1, 4), (4, 1))
)";
  auto mf = ParseModelText(text, "token_mlp.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto m = mf->Build(8);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Planned p = PlanFor(std::move(*m), 8);
  int products = 0;
  for (const Node& n : p.model.graph.nodes()) {
    if (!n.is_backward || n.op != OpKind::kMatMul) continue;
    const std::string& fwd = p.model.graph.node(n.forward_node).name;
    if (fwd != "fc1" && fwd != "fc2") continue;
    for (const DistInstr& c : p.program.instrs) {
      if (c.kind != DistInstr::Kind::kCompute || c.node != n.id) continue;
      ++products;
      for (int v : c.inputs) {  // rows, batch or the weight's split rows: dimension 0
        EXPECT_FALSE(p.program.values[v].layout.dim_axes(0).empty())
            << n.name << "\n"
            << p.program.ToText(p.model.graph);
      }
    }
  }
  EXPECT_EQ(products, 3);  // fc1's da is not needed (x has no gradient)
}

// A backward operator computes on as many devices as its forward operator: MatMul's dA keeps
// the rows split the forward had, instead of gathering the whole batch's gradient because the
// gradient flowing in was produced on another operator's mesh.
TEST(Plans, BackwardOperatorsKeepTheirForwardOperatorsSplits) {
  Mlp2 net;
  net.dense2.matmul.shard("((4,2),(2,1))");
  auto model = nn::BuildClassifier(net, {16}, 8);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Planned p = PlanFor(std::move(*model), 8);
  const Graph& g = p.model.graph;
  const NodeId forward = g.FindNode("dense2.matmul");
  int backward = 0;
  for (const Node& n : g.nodes()) {
    if (!n.is_backward || n.forward_node != forward) continue;
    ++backward;
    const OpStrategy& s = p.program.strategies[n.id];
    int64_t used = 1;
    for (const auto& [letter, axes] : s.letters) used *= s.mesh.GroupSize(axes);
    EXPECT_EQ(used, 8) << n.name << ": " << s.ToString() << "\n" << p.program.ToText(g);
  }
  EXPECT_GE(backward, 2);  // dA and dB
}

TEST(Plans, PartialOutputOfAReductionSplitMatMulIsReducedAndSaysWhy) {
  std::map<std::string, DeviceMesh> meshes;
  Planned p = PlanFor(FromFile("matmul3.yaml", &meshes), 8, meshes);
  auto feeds = FeedsOf(p, "relu2");
  ASSERT_EQ(feeds.size(), 1u);
  EXPECT_NE(feeds[0]->reason.find("P(tp)"), std::string::npos) << feeds[0]->reason;
  EXPECT_GE(feeds[0]->plan->CountSteps(RedistStep::Kind::kReduceScatter) +
                feeds[0]->plan->CountSteps(RedistStep::Kind::kAllReduce),
            1)
      << feeds[0]->plan->ToString();
}

TEST(Plans, EveryParameterGradientIsInItsParameterLayout) {
  Planned p = PlanFor(FromFile("matmul_relu.yaml"), 8);
  ASSERT_EQ(p.program.param_grads.size(), 1u);
  auto [param, grad] = p.program.param_grads[0];
  EXPECT_EQ(p.program.values[param].layout.ShardShape(),
            p.program.values[grad].layout.ShardShape());
  EXPECT_FALSE(p.program.values[grad].layout.is_partial());
}

TEST(Plans, BadStrategiesAreRejectedWithTheRuleBroken) {
  auto expect_error = [](const std::string& strategy, const std::string& fragment) {
    Mlp2 net;
    net.dense1.matmul.shard(strategy);
    auto model = nn::BuildClassifier(net, {16}, 8);
    ASSERT_TRUE(model.ok());
    auto grads = BuildBackward(model->graph, model->loss, model->graph.Parameters());
    ASSERT_TRUE(grads.ok());
    PartitionOptions o;
    o.devices = 4;
    auto program = Partition(model->graph, {model->loss, grads->wrt, grads->grads}, o);
    ASSERT_FALSE(program.ok()) << strategy;
    EXPECT_NE(program.status().message().find(fragment), std::string::npos)
        << program.status().message();
    EXPECT_NE(program.status().message().find("dense1.matmul"), std::string::npos)
        << program.status().message();
  };
  expect_error("((2,4),(2,1))", "split in 4 and in 2 parts");
  expect_error("((8,1),(1,1))", "does not divide");
  expect_error("((3,1),(1,1))", "not divisible by 3");
  expect_error("((1,1),)", "operand(s)");
  expect_error("((1,1,1),(1,1))", "dimension(s)");
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

// One synthetic global batch of `model`'s shape.
Dataset OneBatchFor(const ModelGraph& model) {
  Shape example = model.graph.value(model.input).shape;
  const int64_t batch = example[0];
  example.erase(example.begin());
  return MakeSyntheticDataset(batch, example,
                              static_cast<int>(model.graph.value(model.logits).shape[1]), 1);
}

// What a rank receives in a step is exactly what the planner predicted, byte for byte.
TEST(Plans, MeasuredBytesEqualThePlannedBytes) {
  for (const char* file :
       {"matmul_relu.yaml", "matmul3.yaml", "dense_matmul_net.yaml", "matmul_allgather.yaml"}) {
    SCOPED_TRACE(file);
    std::map<std::string, DeviceMesh> meshes;
    ModelGraph model = FromFile(file, &meshes);
    const int devices =
        LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + file)
            ->parallel()
            .devices;
    const Dataset data = OneBatchFor(model);
    PartitionOptions o;
    o.devices = devices;
    o.meshes = meshes;
    Status st = RunOnDevices(devices, [&](Communicator& comm) -> Status {
      SHARDSCOPE_ASSIGN_OR_RETURN(auto m, [&]() -> Result<ModelGraph> { return FromFile(file); }());
      SHARDSCOPE_ASSIGN_OR_RETURN(auto t,
                                  DistTrainer::Create(std::move(m), TrainConfig{}, o, comm.rank()));
      SHARDSCOPE_ASSIGN_OR_RETURN(float loss, t->Step(comm, data.images, data.labels));
      (void)loss;
      const int64_t planned = t->program().PlannedRecvBytes(comm.rank());
      if (t->stats().bytes_received != planned) {
        return Status::Internal("rank " + std::to_string(comm.rank()) + " received " +
                                std::to_string(t->stats().bytes_received) + " B, planned " +
                                std::to_string(planned));
      }
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.message();
  }
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

// Every rank's thread CPU time in kernels and in redistributions is counted, and within one
// step it cannot exceed the wall time of the same intervals (a thread runs on one core at a
// time); the slack covers the two clocks being read one after the other.
TEST(Plans, RankCpuTimeIsCountedAndNeverExceedsTheWallTime) {
  std::map<std::string, DeviceMesh> meshes;
  ModelGraph model = FromFile("matmul3.yaml", &meshes);
  const Dataset data = OneBatchFor(model);
  PartitionOptions o;
  o.devices = 8;  // matmul3.yaml's strategies are for 8 devices
  o.meshes = meshes;
  Status st = RunOnDevices(o.devices, [&](Communicator& comm) -> Status {
    SHARDSCOPE_ASSIGN_OR_RETURN(auto m,
                                [&]() -> Result<ModelGraph> { return FromFile("matmul3.yaml"); }());
    SHARDSCOPE_ASSIGN_OR_RETURN(auto t,
                                DistTrainer::Create(std::move(m), TrainConfig{}, o, comm.rank()));
    // Off by default: training pays no clock system calls.
    SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, data.images, data.labels).status());
    if (t->stats().compute_cpu_seconds != 0 || t->stats().comm_cpu_seconds != 0)
      return Status::Internal("cpu time counted without set_cpu_timing(true)");
    t->set_cpu_timing(true);
    for (int i = 0; i < 3; ++i)
      SHARDSCOPE_RETURN_IF_ERROR(t->Step(comm, data.images, data.labels).status());
    const RankStats& s = t->stats();
    const double slack = 1e-3;
    if (s.compute_cpu_seconds <= 0 || s.comm_cpu_seconds <= 0 ||
        s.compute_cpu_seconds > s.compute_seconds + slack ||
        s.comm_cpu_seconds > s.comm_seconds + slack) {
      return Status::Internal("rank " + std::to_string(comm.rank()) + ": cpu " +
                              std::to_string(s.compute_cpu_seconds) + " s in kernels of " +
                              std::to_string(s.compute_seconds) + " s, " +
                              std::to_string(s.comm_cpu_seconds) + " s in redistributions of " +
                              std::to_string(s.comm_seconds) + " s");
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
}

// Mesh axes follow the highest-rank operand's letters (OperandsByRank): an Add reading a
// bias first lays its blocks on the ranks its activation's producer has them on, so the
// activation needs no exchange (bias-first order had permuted every block).
TEST(Plans, MeshAxesFollowTheHighestRankOperand) {
  auto mf = ParseModelText(R"(name: bias_first
input: {shape: [16]}
classes: 8
parameters:
  w: {shape: [16, 8], init: normal}
  b: {shape: [8], init: zeros}
operators:
  - mm: {op: MatMul, inputs: [x, w]}
  - relu0: {op: ReLU, inputs: [mm]}
  - add: {op: Add, inputs: [b, relu0]}
output: add
loss: softmax_cross_entropy
optimizer: {type: sgd, lr: 0.01}
data: {dataset: synthetic, synthetic_size: 64}
training: {batch: 8, epochs: 1, seed: 1}
parallel:
  mode: semi_auto
  devices: 8
  strategies:
    relu0: ((4, 2),)
    add: ((2,), (4, 2))
)",
                           "bias_first.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto m = mf->Build(8);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Planned p = PlanFor(std::move(*m), 8);
  const OpStrategy& add = p.program.strategies[p.model.graph.FindNode("add")];
  EXPECT_EQ(add.mesh.shape(), (Shape{4, 2})) << add.ToString();
  for (const DistInstr* r : FeedsOf(p, "add")) {
    EXPECT_NE(r->reason.find("parameter"), std::string::npos)
        << "relu0's output is exchanged: " << r->reason;
  }
}

// A strategy that uses fewer devices than the run gets a replica axis "rep" appended last:
// consecutive ranks hold the same block (documented in strategy.h).
TEST(Plans, ReplicaFactorOfASmallStrategyIsTheLastMeshAxis) {
  Mlp2 net;
  net.dense1.matmul.shard("((2,1),(1,1))");  // 2 of 8 devices
  auto model = nn::BuildClassifier(net, {16}, 8);
  ASSERT_TRUE(model.ok());
  Planned p = PlanFor(std::move(*model), 8);
  const NodeId mm = p.model.graph.FindNode("dense1.matmul");
  const OpStrategy& s = p.program.strategies[mm];
  ASSERT_EQ(s.mesh.num_axes(), 2);
  EXPECT_EQ(s.mesh.names()[1], "rep");
  EXPECT_EQ(s.mesh.shape(), (Shape{2, 4}));
  auto x = s.LayoutOf("mk", {8, 16});
  ASSERT_TRUE(x.ok());
  for (int r = 0; r < 8; ++r) EXPECT_EQ(x->ShardOffsets(r)[0], r < 4 ? 0 : 4) << "rank " << r;
}

}  // namespace
}  // namespace shardscope

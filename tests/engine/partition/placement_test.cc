// The placement pass (per-worker programs, cut edges, order) and placed training against
// the correctness law, on in-process devices.
#include <gtest/gtest.h>

#include "placement_law.h"
#include "shardscope/autodiff.h"
#include "shardscope/model_file.h"

namespace shardscope {
namespace {

using testing_law::BuildCrossingChain;
using testing_law::CheckPlacedLaw;
using testing_law::CrossingChainData;

struct Placed {
  ModelGraph model;
  PlacedProgram program;
};

Result<Placed> PlaceChain(int workers) {
  Placed p;
  SHARDSCOPE_ASSIGN_OR_RETURN(p.model, BuildCrossingChain(8));
  const std::vector<ValueId> params = p.model.graph.Parameters();
  SHARDSCOPE_ASSIGN_OR_RETURN(Gradients grads, BuildBackward(p.model.graph, p.model.loss, params));
  SHARDSCOPE_ASSIGN_OR_RETURN(
      p.program, PlaceGraph(p.model.graph, {p.model.loss}, params, grads.grads, workers));
  return p;
}

TEST(Placement, ChainCrossingWorkersGetsSendsBothWays) {
  auto placed = PlaceChain(5);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  const Graph& g = placed->model.graph;
  const PlacedProgram& p = placed->program;
  // Forward: flatten(0) -> d1(1) -> relu(0) -> d2(3) -> relu(0) -> d3(1) -> relu(0) -> d4(4)
  // -> relu(0) -> d5(2) -> loss(0): 10 activation edges; gradients go back over 9 of them
  // (the flattened input needs none).
  int forward = 0, backward = 0;
  for (const CutEdge& e : p.edges) {
    EXPECT_NE(e.src_worker, e.dst_worker);
    (e.is_backward ? backward : forward)++;
  }
  EXPECT_EQ(forward, 10);
  EXPECT_EQ(backward, 9);
  // Parameters, their gradients (and so the optimizer state) live with their operator.
  auto owns = [&](int w, const std::string& name) {
    for (ValueId v : p.programs[w].params)
      if (g.value(v).name == name) return true;
    return false;
  };
  EXPECT_TRUE(owns(1, "d1.weight"));
  EXPECT_TRUE(owns(1, "d3.weight"));
  EXPECT_TRUE(owns(3, "d2.weight"));
  EXPECT_TRUE(owns(4, "d4.bias"));
  EXPECT_TRUE(owns(2, "d5.weight"));
  EXPECT_TRUE(p.programs[0].params.empty());
  // Backward operators run with their forward operator.
  for (const Node& n : g.nodes()) {
    if (n.is_backward) {
      EXPECT_EQ(p.node_worker[n.id], p.node_worker[n.forward_node]) << n.name;
    }
  }
  EXPECT_EQ(p.target_worker[0], 0);  // the loss is not placed
  // Every send has its receive on the other side, once per edge.
  for (size_t e = 0; e < p.edges.size(); ++e) {
    int sends = 0, recvs = 0;
    for (int w = 0; w < p.workers; ++w) {
      for (const auto* list : {&p.programs[w].forward, &p.programs[w].backward}) {
        for (const PlacedInstr& in : *list) {
          if (in.edge != static_cast<int>(e)) continue;
          if (in.kind == PlacedInstr::Kind::kSend) {
            ++sends;
            EXPECT_EQ(w, p.edges[e].src_worker);
          } else {
            ++recvs;
            EXPECT_EQ(w, p.edges[e].dst_worker);
          }
        }
      }
    }
    EXPECT_EQ(sends, 1);
    EXPECT_EQ(recvs, 1);
  }
  const std::string text = p.ToText(g);
  EXPECT_NE(text.find("worker 3 (stage"), std::string::npos) << text;
  EXPECT_NE(text.find("send d2.bias_add -> worker 0"), std::string::npos) << text;
}

TEST(Placement, OrdersAreDeadlockFreeAndOneFOneBRefusesACrossingChain) {
  auto placed = PlaceChain(5);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  const Graph& g = placed->model.graph;
  for (int m : {1, 2, 4}) {
    PipelineOptions o{5, m, PipelineSchedule::kGPipe};
    Status st = CheckDeadlockFree(g, placed->program, PipelineOrder(placed->program, o));
    EXPECT_TRUE(st.ok()) << "gpipe, " << m << " micro-batches: " << st.message();
  }
  PipelineOptions o{5, 4, PipelineSchedule::kOneFOneB};
  Status st = CheckDeadlockFree(g, placed->program, PipelineOrder(placed->program, o));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("deadlocks"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("gpipe"), std::string::npos) << st.message();
}

TEST(Placement, RejectsWorkersBeyondTheDevicesAndPlaceWithStrategy) {
  auto placed = PlaceChain(4);  // d4 is on worker 4
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("'d4.matmul' is placed on worker 4"), std::string::npos)
      << placed.status().message();
  EXPECT_NE(placed.status().message().find("--devices 5"), std::string::npos);

  auto model = BuildCrossingChain(8);
  ASSERT_TRUE(model.ok());
  const NodeId mm = model->graph.FindNode("d2.matmul");
  model->graph.mutable_node(mm).annotations.in_strategy = "((1,2),(2,1))";
  auto refused = PlaceGraph(model->graph, {model->loss}, {}, {}, 5);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(refused.status().message().find("d2.matmul"), std::string::npos);
  EXPECT_NE(refused.status().message().find("sub-mesh"), std::string::npos);
}

TEST(Placement, RejectsAParameterSharedAcrossWorkers) {
  Graph g;
  const ValueId x = g.AddInput("x", {2, 3});
  const ValueId w = g.AddParameter("w", {3, 3}, {});
  const NodeId a = g.AddNode(OpKind::kMatMul, "a", {x, w}).value();
  const NodeId b = g.AddNode(OpKind::kMatMul, "b", {g.node(a).outputs[0], w}).value();
  g.mutable_node(b).annotations.worker = 1;
  auto p = PlaceGraph(g, {g.node(b).outputs[0]}, {}, {}, 2);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("parameter 'w'"), std::string::npos) << p.status().message();
}

TEST(Placement, RoleOtherThanWorkerIsRefused) {
  nn::Dense d("d", 4, 2);
  d.place("server", 1);
  auto built = nn::BuildClassifier(d, {4}, 2);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("the only role is \"worker\""), std::string::npos)
      << built.status().message();
}

TEST(PlacedLaw, CrossingChainEqualsSingleDevice) {
  const Dataset data = CrossingChainData(16, 6);
  Status st = CheckPlacedLaw(BuildCrossingChain, data, 16, 5, {}, 6);
  EXPECT_TRUE(st.ok()) << st.message();
  // More devices than workers: the extra ones idle.
  st = CheckPlacedLaw(BuildCrossingChain, data, 16, 6, {}, 3);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(PlacedLaw, MicroBatchesEqualTheNonPipelinedRun) {
  const Dataset data = CrossingChainData(16, 5);
  for (int m : {2, 4}) {
    PipelineOptions o;
    o.micro_batches = m;
    Status st = CheckPlacedLaw(BuildCrossingChain, data, 16, 5, o, 5);
    EXPECT_TRUE(st.ok()) << m << " micro-batches: " << st.message();
  }
}

// A linear chain, one contiguous stage per worker: 2 -> 1 -> 0 (the loss is on worker 0).
class LinearChain : public nn::Module {
 public:
  LinearChain() : nn::Module("") {
    flatten.place("worker", 2);
    d1.place("worker", 2);
    relu1.place("worker", 2);
    d2.place("worker", 1);
    relu2.place("worker", 1);
  }
  nn::Flatten flatten{"flatten"};
  nn::Dense d1{"d1", 16, 24}, d2{"d2", 24, 16}, d3{"d3", 16, 8};
  nn::ReLU relu1{"relu1"}, relu2{"relu2"};

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    x = relu1(b, d1(b, flatten(b, x)));
    return d3(b, relu2(b, d2(b, x)));
  }
};

Result<ModelGraph> BuildLinearChain(int64_t batch) {
  LinearChain net;
  return nn::BuildClassifier(net, {1, 4, 4}, batch);
}

TEST(PlacedLaw, OneFOneBOnALinearChain) {
  const Dataset data = CrossingChainData(16, 4);
  PipelineOptions o;
  o.micro_batches = 4;
  o.schedule = PipelineSchedule::kOneFOneB;
  Status st = CheckPlacedLaw(BuildLinearChain, data, 16, 3, o, 4);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(PlacedLaw, OneFOneBOnACrossingChainIsRefused) {
  PipelineOptions o{5, 4, PipelineSchedule::kOneFOneB};
  auto model = BuildCrossingChain(4);
  ASSERT_TRUE(model.ok());
  auto t = PipelineTrainer::Create(std::move(*model), testing_law::LawConfig(), o, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("schedule 1f1b with 4 micro-batches"), std::string::npos)
      << t.status().message();
}

// Seed 001: LeNet5 on real MNIST, conv1 -> 3, conv2 -> 4, fc1 -> 0, fc2 -> 1, fc3 -> 2.
TEST(PlacedLaw, Seed001LeNetOnMnistFirst20Steps) {
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/lenet5_place.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  ImageOptions opts;
  opts.pad_to = 32;
  auto data =
      LoadIdxDataset(std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist", Split::kTrain, opts, 32 * 20);
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto build = [&](int64_t batch) { return mf->Build(batch); };
  Status st = CheckPlacedLaw(build, *data, 32, 5, {}, 20);
  EXPECT_TRUE(st.ok()) << st.message();
  PipelineOptions o;
  o.micro_batches = 4;
  st = CheckPlacedLaw(build, *data, 32, 5, o, 5);
  EXPECT_TRUE(st.ok()) << "4 micro-batches: " << st.message();
  // Unplaced operators with their producer: each layer a contiguous stage, so 1F1B runs.
  o.schedule = PipelineSchedule::kOneFOneB;
  o.unplaced = UnplacedPolicy::kWithProducer;
  st = CheckPlacedLaw(build, *data, 32, 5, o, 5);
  EXPECT_TRUE(st.ok()) << "1f1b, unplaced with producer: " << st.message();
}

TEST(Placement, UnplacedOperatorsFollowTheirProducerWhenAsked) {
  auto mf = LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/lenet5_place.yaml");
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto model = mf->Build(8);
  ASSERT_TRUE(model.ok());
  const Graph& g = model->graph;
  for (UnplacedPolicy policy : {UnplacedPolicy::kWorkerZero, UnplacedPolicy::kWithProducer}) {
    auto p = PlaceGraph(g, {model->logits}, {}, {}, 5, policy);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const bool follow = policy == UnplacedPolicy::kWithProducer;
    EXPECT_EQ(p->node_worker[g.FindNode("relu")], follow ? 3 : 0);     // after conv1
    EXPECT_EQ(p->node_worker[g.FindNode("flatten")], follow ? 4 : 0);  // after conv2
    EXPECT_EQ(p->node_worker[g.FindNode("fc1.matmul")], 0);            // placed
    EXPECT_EQ(p->node_worker[g.FindNode("relu_3")], follow ? 1 : 0);   // after fc2
    // Up to the logits: 3 -> 0 -> 4 -> 0 -> 1 -> 0 -> 2 (six cut edges), or with the
    // producer the chain 3 -> 4 -> 0 -> 1 -> 2 (four).
    EXPECT_EQ(p->edges.size(), follow ? 4u : 6u);
  }
}

}  // namespace
}  // namespace shardscope

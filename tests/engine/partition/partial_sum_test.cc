// A value read by several column-split projections (q, k and v of attention): each reader's
// input gradient is a partial sum over the devices; the partitioner adds them as they are and
// reduces their sum once (Megatron's one all-reduce), and training still equals one device.
#include <gtest/gtest.h>

#include "law.h"

#include "shardscope/autodiff.h"
#include "shardscope/data.h"
#include "shardscope/model_file.h"
#include "shardscope/partition.h"

namespace shardscope {
namespace {

// h feeds three projections split by columns over 8 devices (as q, k and v), whose outputs
// are added and read by a row-split projection.
constexpr const char* kThreeReaders = R"(name: three_readers
input: {shape: [16]}
classes: 8
parameters:
  w0: {shape: [16, 32], init: normal}
  wq: {shape: [32, 64], init: normal}
  wk: {shape: [32, 64], init: normal}
  wv: {shape: [32, 64], init: normal}
  wo: {shape: [64, 8], init: normal}
operators:
  - h: {op: MatMul, inputs: [x, w0]}
  - q: {op: MatMul, inputs: [h, wq]}
  - k: {op: MatMul, inputs: [h, wk]}
  - v: {op: MatMul, inputs: [h, wv]}
  - qk: {op: Add, inputs: [q, k]}
  - qkv: {op: Add, inputs: [qk, v]}
  - o: {op: MatMul, inputs: [qkv, wo]}
loss: softmax_cross_entropy
optimizer: {type: sgd, lr: 0.05}
data: {dataset: synthetic, synthetic_size: 64}
training: {batch: 8, epochs: 1, seed: 3}
parallel:
  mode: semi_auto
  devices: 8
  strategies:
    q: ((1, 1), (1, 8))
    k: ((1, 1), (1, 8))
    v: ((1, 1), (1, 8))
    qk: ((1, 8), (1, 8))
    qkv: ((1, 8), (1, 8))
    o: ((1, 8), (8, 1))
)";

Result<ModelFile> ThreeReaders() { return ParseModelText(kThreeReaders, "three_readers.yaml"); }

TEST(PartialSum, ThreeColumnSplitReadersReduceTheirInputGradientOnce) {
  auto mf = ThreeReaders();
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto model = mf->Build(8);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto grads = BuildBackward(model->graph, model->loss, model->graph.Parameters());
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  PartitionOptions o;
  o.devices = 8;
  auto program = Partition(model->graph, {model->loss, grads->wrt, grads->grads}, o);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const std::string text = program->ToText(model->graph);
  // Reductions of activation gradients: the input gradient of q, k and v, summed, is one.
  int reductions = 0;
  bool in_backward = false;
  for (const DistInstr& i : program->instrs) {
    if (i.kind == DistInstr::Kind::kCompute) {
      in_backward = in_backward || model->graph.node(i.node).is_backward;
      continue;
    }
    const bool partial = program->values[i.inputs[0]].layout.is_partial();
    const bool activation = i.reason.find("the update of parameter") == std::string::npos &&
                            i.reason.find("the reported loss") == std::string::npos;
    reductions += in_backward && partial && activation;
  }
  EXPECT_EQ(reductions, 1) << text;
}

TEST(PartialSum, SummedPartialGradientsTrainAsOneDevice) {
  auto mf = ThreeReaders();
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  const ModelFile& file = *mf;
  const int64_t batch = 8;
  Dataset data = MakeSyntheticDataset(batch * 5, file.example_shape(), file.num_classes(), 7);
  Status st = testing_law::CheckLaw([&file] { return file.Build(batch); }, data, batch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

}  // namespace
}  // namespace shardscope

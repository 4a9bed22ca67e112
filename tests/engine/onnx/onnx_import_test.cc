// The ONNX importer on the files of tests/data/onnx (make_models.py): PyTorch's own forward
// pass reproduced, name scopes, shape folding, weights inline / external / absent, refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "onnx_test_util.h"
#include "shardscope/onnx_import.h"
#include "shardscope/trainer.h"

namespace shardscope {
namespace {

using onnx_test::Build;
using onnx_test::DataPath;
using onnx_test::ExpectTorchLogits;
using onnx_test::ReadBytes;

TEST(OnnxImport, MlpMatchesPyTorch) { ExpectTorchLogits("mlp"); }
// LayerNorm, GeLU from its erf pattern, view() shape subgraphs, rank-3 MatMul, Mul by 0.5.
TEST(OnnxImport, TransformerStyleMlpMatchesPyTorch) { ExpectTorchLogits("mlp_view"); }
// Conv with 'same' and no padding, bias, MaxPool, Flatten.
TEST(OnnxImport, ConvNetMatchesPyTorch) { ExpectTorchLogits("convnet"); }

TEST(OnnxImport, OperatorsAreNamedAfterTheExportersScopes) {
  auto model = Build("mlp_view.onnx", 2);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Graph& g = model->graph;
  EXPECT_NE(g.FindNode("layer.0.up.Gemm"), kNoNode);
  EXPECT_NE(g.FindNode("layer.1.norm.LayerNormalization"), kNoNode);
  const NodeId gelu = g.FindNode("layer.1.act.Mul_1");  // the pattern's last node names it
  ASSERT_NE(gelu, kNoNode);
  EXPECT_EQ(g.node(gelu).op, OpKind::kGeLU);
  for (const Node& n : g.nodes()) {  // shape arithmetic folded: no node of it is left
    EXPECT_EQ(n.name.find("Shape"), std::string::npos) << n.name;
    EXPECT_EQ(n.name.find("Concat"), std::string::npos) << n.name;
    EXPECT_NE(n.name.find("act.Erf"), 0u) << n.name;
  }
  EXPECT_EQ(OnnxOperatorName("/layer.3/attn/q_proj/MatMul"), "layer.3.attn.q_proj.MatMul");

  auto onnx = LoadOnnxModel(DataPath("mlp_view.onnx"));
  ASSERT_TRUE(onnx.ok()) << onnx.status().message();
  Graph graph;
  Builder b(&graph);
  std::vector<OnnxScope> scopes;
  auto out = ImportOnnxGraph(**onnx, b, b.Input("x", {2, 1, 28, 28}), &scopes);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<std::string> paths;
  for (const OnnxScope& s : scopes) paths.push_back(s.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"embed", "layer", "layer.0", "layer.0.norm",
                                             "layer.0.up", "layer.0.act", "layer.0.down", "layer.1",
                                             "layer.1.norm", "layer.1.up", "layer.1.act",
                                             "layer.1.down", "proj", "head"}));
  const OnnxScope& act = scopes[5];
  ASSERT_EQ(act.nodes.size(), 1u);
  EXPECT_EQ(graph.node(act.nodes[0]).op, OpKind::kGeLU);
  EXPECT_EQ(act.input_shape, (Shape{2, 64}));
}

TEST(OnnxImport, ShapeSubgraphFoldsForEachBatch) {
  for (int64_t batch : {3, 5}) {
    auto model = Build("fold.onnx", batch);
    ASSERT_TRUE(model.ok()) << model.status().message();
    const NodeId reshape = model->graph.FindNode("view.Reshape");
    ASSERT_NE(reshape, kNoNode);
    EXPECT_EQ(model->graph.node(reshape).attrs.shape, (Shape{batch, 16, 49}));
    const NodeId back = model->graph.FindNode("view.Reshape_1");
    ASSERT_NE(back, kNoNode);
    EXPECT_EQ(model->graph.node(back).attrs.shape, (Shape{batch, 784}));  // 0 copies, -1 infers
    EXPECT_EQ(model->graph.FindNode("view.Shape"), kNoNode);
  }
}

const Value& ParameterNamed(const ModelGraph& m, const std::string& name) {
  const ValueId v = m.graph.FindValue(name);
  EXPECT_NE(v, kNoValue) << name;
  return m.graph.value(v);
}

TEST(OnnxImport, WeightsInlineExternalOrAbsent) {
  auto inline_model = Build("mlp.onnx", 2);
  auto external = Build("mlp_external.onnx", 2);
  auto plan_only = Build("mlp.onnx", 2, /*weights=*/false);
  auto no_params = Build("mlp_noparams.onnx", 2);
  for (const auto* m : {&inline_model, &external, &plan_only, &no_params})
    ASSERT_TRUE(m->ok()) << m->status().message();
  const Value& w = ParameterNamed(*inline_model, "fc1.weight");
  EXPECT_EQ(w.shape, (Shape{64, 784}));
  ASSERT_EQ(w.init.kind, InitSpec::kData);
  const Value& we = ParameterNamed(*external, "fc1.weight");
  ASSERT_EQ(we.init.kind, InitSpec::kData);
  EXPECT_EQ(w.init.data->ToVector(), we.init.data->ToVector());
  // Without weights: the same shapes, seeded initialisers.
  for (const ModelGraph* m : {&*plan_only, &*no_params}) {
    const Value& p = ParameterNamed(*m, "fc1.weight");
    EXPECT_EQ(p.shape, (Shape{64, 784}));
    EXPECT_EQ(p.init.kind, InitSpec::kFanInUniform);
    EXPECT_EQ(ParameterNamed(*m, "fc2.bias").init.kind, InitSpec::kZeros);
  }
  EXPECT_EQ(plan_only->graph.ToText(), no_params->graph.ToText());
}

// A bad file is refused naming the node, never half imported.
void ExpectRefused(const Result<ModelFile>& mf, const std::vector<std::string>& parts) {
  ASSERT_FALSE(mf.ok());
  for (const std::string& p : parts) {
    EXPECT_NE(mf.status().message().find(p), std::string::npos)
        << "missing '" << p << "' in: " << mf.status().message();
  }
}

TEST(OnnxImport, RefusesUnknownOperatorNamingNodeAndSupportedSet) {
  ExpectRefused(LoadModelFile(DataPath("unknown_op.onnx")),
                {"unknown_op.onnx", "node '/head/TopK' (TopK)", "not supported",
                 "supported: ", "Gemm", "LayerNormalization", "MatMul"});
}

TEST(OnnxImport, RefusesUnsupportedOpset) {
  ExpectRefused(LoadModelFile(DataPath("bad_opset.onnx")), {"bad_opset.onnx", "opset 99"});
}

TEST(OnnxImport, RefusesInconsistentShapesNamingNode) {
  ExpectRefused(LoadModelFile(DataPath("bad_shapes.onnx")), {"bad_shapes.onnx", "/fc/MatMul"});
}

TEST(OnnxImport, RefusesTruncatedFile) {
  const std::string bytes = ReadBytes(DataPath("mlp.onnx"));
  for (size_t keep : {size_t{0}, size_t{7}, bytes.size() / 2, bytes.size() - 3}) {
    auto m = ParseOnnxModel(bytes.substr(0, keep), "cut.onnx");
    ASSERT_FALSE(m.ok()) << keep;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidInput) << m.status().message();
    EXPECT_EQ(m.status().message().rfind("cut.onnx: ", 0), 0u) << m.status().message();
  }
}

TEST(OnnxImport, ModelFileImportsWithParallelSectionByNodeNameAndScope) {
  const std::string text =
      "import: mlp_view.onnx\n"
      "training: {batch: 16}\n"
      "parallel:\n"
      "  mode: semi_auto\n"
      "  devices: 8\n"
      "  strategies:\n"
      "    /embed/Gemm: ((2, 4), (1, 4))\n"
      "    layer.0.up.Gemm: ((8, 1), (1, 1))\n"
      "  place:\n"
      "    head: 0\n";
  auto mf = ParseModelText(text, DataPath("import.yaml"));
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  EXPECT_EQ(mf->import_path(), "mlp_view.onnx");
  EXPECT_EQ(mf->example_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(mf->num_classes(), 10);
  std::vector<std::string> ops;
  for (const AnnotationEntry& a : mf->parallel().annotations) ops.push_back(a.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"embed.Gemm", "layer.0.up.Gemm", "head.Gemm",
                                           "head.Gemm_bias"}));
  auto model = mf->Build(16);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->graph.node(model->graph.FindNode("embed.Gemm")).annotations.in_strategy,
            "((2, 4), (1, 4))");

  // A strategy on a scope of several operators is refused as for YAML modules.
  auto multi = ParseModelText(
      "import: mlp_view.onnx\nparallel:\n  strategies:\n    layer.0.up: ((8, 1), (1, 1))\n",
      DataPath("multi.yaml"));
  ExpectRefused(multi, {"multi.yaml:4:5", "layer.0.up.Gemm", "layer.0.up.Gemm_bias"});
  auto unknown = ParseModelText(
      "import: mlp_view.onnx\nparallel:\n  strategies:\n    /layer.9/up/Gemm: ((8, 1), (1, 1))\n",
      DataPath("unknown.yaml"));
  ExpectRefused(unknown, {"unknown.yaml:4:5", "layer.9.up.Gemm"});
  auto with_layers = ParseModelText("import: mlp.onnx\nlayers: []\n", DataPath("l.yaml"));
  ExpectRefused(with_layers, {"l.yaml:2:1", "'layers' cannot be given with import"});
  auto missing = ParseModelText("import: nothing.onnx\n", DataPath("n.yaml"));
  ExpectRefused(missing, {"n.yaml:1:9", "nothing.onnx"});
}

}  // namespace
}  // namespace shardscope

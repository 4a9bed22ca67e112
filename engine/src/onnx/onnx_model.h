// Internal: a parsed, checked ONNX model and the pieces of the importer.
//
//   onnx_model.cc    reading the file: checker, opsets, supported operators, shape inference,
//                    initializers (inline or external data), the data input, GeLU patterns
//   onnx_fold.cc     host constants: shape arithmetic folded once the batch is fixed
//   onnx_ops.cc      the mapping table, ONNX operator -> Shardscope operators
//   onnx_import.cc   the walk over the nodes: slots, name scopes, errors naming the node
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardscope/onnx_import.h"

namespace shardscope {

// A constant known at import time: an initializer or Constant of integer type, a rank-0
// float, or a folded shape computation. Values are doubles (exact for shape arithmetic).
struct HostConst {
  Shape shape;
  bool integer = true;
  std::vector<double> values;
  int64_t Int(size_t i) const;  // clamped to ±4e18, NaN as 0
  std::vector<int64_t> Ints() const;
};

// A float initializer (or, in a file exported without parameters, a graph input other
// than the data): a parameter of the graph.
struct OnnxWeight {
  Shape shape;
  std::shared_ptr<const Tensor> data;  // null: plan-only, or exported without parameters
};

class OnnxModel {
 public:
  onnx::ModelProto proto;  // initializer data cleared: it lives in `weights` / `constants`
  std::string path;
  OnnxInputInfo input;
  std::string output;  // the graph output read as logits
  int opset = 0;
  std::unordered_map<std::string, OnnxWeight> weights;
  std::unordered_map<std::string, HostConst> constants;
  // Exporters' erf form of GeLU (x·0.5·(1 + erf(x/√2))): the node that ends the pattern
  // -> x; the pattern's other nodes are skipped.
  std::unordered_map<int, std::string> gelu_end;
  std::vector<bool> fused;
};

// ---------------------------------------------------------------- pieces of the importer

// "/layer.3/attn/q_proj/MatMul" -> scope "layer.3.attn.q_proj", local "MatMul"; an
// unnamed node gets "<OpType>_<index>".
struct NodeName {
  std::string scope, local;
};
NodeName SplitNodeName(const onnx::NodeProto& node, int index);
// "node '/fc1/Gemm' (Gemm)"
std::string DescribeNode(const onnx::NodeProto& node, int index);

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name);

// Integer element types (bool included): such constants hold whole numbers.
bool IsIntegerType(int onnx_type);

// Converts a TensorProto with inline data (Constant values, small initializers).
Result<HostConst> HostConstFromTensor(const onnx::TensorProto& t);

// True when the folder evaluates `op_type` on the host (given constant inputs; Shape and
// Size on any input).
bool IsFoldable(const std::string& op_type);
const std::vector<std::string>& FoldableOps();
// Evaluates one node whose inputs are all constants (`shapes` gives the shape of a
// non-constant input for Shape/Size; `inputs[i]` is null for such an input).
Result<std::vector<HostConst>> FoldNode(const onnx::NodeProto& node,
                                        const std::vector<const HostConst*>& inputs,
                                        const std::vector<Shape>& shapes);

// ONNX Reshape's target (0 copies the input's dimension unless allow_zero; one -1 is
// inferred) as a concrete shape.
Result<Shape> ReshapeTarget(const Shape& in, const std::vector<int64_t>& target, bool allow_zero);

class ImportContext;
using OnnxConverter = Status (*)(ImportContext&);
// The converter for an ONNX op type of the default domain, or null.
OnnxConverter FindConverter(const std::string& op_type);
std::vector<std::string> ConverterOps();

}  // namespace shardscope

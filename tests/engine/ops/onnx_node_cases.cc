#include "onnx_node_cases.h"

#include <algorithm>

namespace shardscope::onnx_cases {
namespace {

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t Int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = Attr(n, name);
  return a ? a->i() : fallback;
}
float Float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const auto* a = Attr(n, name);
  return a ? a->f() : fallback;
}
std::vector<int64_t> Ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = Attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}
// The values of an integer input tensor (empty when the input is absent).
std::vector<int64_t> IntInput(const std::vector<Tensor>& in, size_t i) {
  if (i >= in.size() || in[i].dtype() != DType::kI32) return {};
  return std::vector<int64_t>(in[i].ints(), in[i].ints() + in[i].size());
}
bool AllF32(const std::vector<Tensor>& in, std::initializer_list<int> which) {
  for (int i : which) {
    if (i < static_cast<int>(in.size()) && in[i].dtype() != DType::kF32) return false;
  }
  return true;
}
std::vector<int> FirstInputs(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace

const std::vector<std::string>& MappedOnnxOps() {
  static const std::vector<std::string> kOps = {"MatMul",
                                                "Add",
                                                "Sub",
                                                "Mul",
                                                "Div",
                                                "Pow",
                                                "Sqrt",
                                                "Tanh",
                                                "Sigmoid",
                                                "Relu",
                                                "Identity",
                                                "Where",
                                                "Cast",
                                                "Concat",
                                                "Split",
                                                "Slice",
                                                "Squeeze",
                                                "Unsqueeze",
                                                "Softmax",
                                                "LogSoftmax",
                                                "Transpose",
                                                "Reshape",
                                                "Flatten",
                                                "Gather",
                                                "LayerNormalization",
                                                "ReduceSum",
                                                "ReduceMean",
                                                "AveragePool",
                                                "GlobalAveragePool",
                                                "BatchNormalization"};
  return kOps;
}

std::string MapOnnxNode(const onnx::NodeProto& n, const std::vector<Tensor>& in, NodeCase* c) {
  const std::string& t = n.op_type();
  c->attrs = {};
  c->inputs = {0};
  c->outputs = 1;
  if (t == "MatMul" || t == "Add" || t == "Sub" || t == "Mul" || t == "Div" || t == "Pow") {
    if (!AllF32(in, {0, 1})) return "integer operands (Shardscope's arithmetic is f32)";
    c->op = t == "MatMul" ? OpKind::kMatMul
            : t == "Add"  ? OpKind::kAdd
            : t == "Sub"  ? OpKind::kSub
            : t == "Mul"  ? OpKind::kMul
            : t == "Div"  ? OpKind::kDiv
                          : OpKind::kPow;
    c->inputs = {0, 1};
    return "";
  }
  if (t == "Sqrt" || t == "Tanh" || t == "Sigmoid" || t == "Relu" || t == "Identity") {
    if (!AllF32(in, {0}) && t != "Identity") return "integer operand";
    c->op = t == "Sqrt"      ? OpKind::kSqrt
            : t == "Tanh"    ? OpKind::kTanh
            : t == "Sigmoid" ? OpKind::kSigmoid
            : t == "Relu"    ? OpKind::kReLU
                             : OpKind::kIdentity;
    return "";
  }
  if (t == "Where") {
    if (!AllF32(in, {1, 2})) return "integer values (Where chooses between f32 tensors)";
    c->op = OpKind::kWhere;
    c->inputs = {0, 1, 2};
    return "";
  }
  if (t == "Cast") {
    const int64_t to = Int(n, "to", 0);
    if (to != onnx::TensorProto::FLOAT && to != onnx::TensorProto::INT32 &&
        to != onnx::TensorProto::INT64) {
      return "cast to " + onnx::TensorProto::DataType_Name(static_cast<int>(to)) +
             " (Shardscope's types are f32 and i32)";
    }
    c->op = OpKind::kCast;
    c->attrs.dtype = to == onnx::TensorProto::FLOAT ? DType::kF32 : DType::kI32;
    return "";
  }
  if (t == "Concat") {
    c->op = OpKind::kConcat;
    c->attrs.axis = Int(n, "axis", 0);
    c->inputs = FirstInputs(n.input_size());
    return "";
  }
  if (t == "Split") {
    c->op = OpKind::kSplit;
    c->attrs.axis = Int(n, "axis", 0);
    c->attrs.sizes = n.input_size() > 1 ? IntInput(in, 1) : Ints(n, "split");
    c->outputs = n.output_size();
    if (c->attrs.sizes.empty()) {  // equal parts
      const int64_t rank = in[0].rank(),
                    axis = c->attrs.axis < 0 ? c->attrs.axis + rank : c->attrs.axis;
      c->attrs.sizes.assign(n.output_size(), in[0].dim(static_cast<int>(axis)) / n.output_size());
    }
    return "";
  }
  if (t == "Slice") {
    c->op = OpKind::kSlice;
    c->attrs.starts = IntInput(in, 1);
    c->attrs.ends = IntInput(in, 2);
    c->attrs.axes = IntInput(in, 3);
    c->attrs.steps = IntInput(in, 4);
    if (c->attrs.axes.empty()) {
      for (size_t i = 0; i < c->attrs.starts.size(); ++i) c->attrs.axes.push_back(i);
    }
    return "";
  }
  if (t == "Squeeze" || t == "Unsqueeze") {
    c->op = t == "Squeeze" ? OpKind::kSqueeze : OpKind::kUnsqueeze;
    c->attrs.axes = n.input_size() > 1 ? IntInput(in, 1) : Ints(n, "axes");
    return "";
  }
  if (t == "Softmax" || t == "LogSoftmax") {
    c->op = t == "Softmax" ? OpKind::kSoftmax : OpKind::kLogSoftmax;
    c->attrs.axis = Int(n, "axis", -1);
    return "";
  }
  if (t == "Transpose") {
    c->op = OpKind::kTranspose;
    c->attrs.axes = Ints(n, "perm");
    if (c->attrs.axes.empty()) {
      for (int d = in[0].rank(); d-- > 0;) c->attrs.axes.push_back(d);
    }
    return "";
  }
  if (t == "Reshape") {
    c->op = OpKind::kReshape;
    c->attrs.shape = IntInput(in, 1);
    if (std::find(c->attrs.shape.begin(), c->attrs.shape.end(), 0) != c->attrs.shape.end()) {
      return "a 0 in the target shape (copy a dimension; an importer resolves it)";
    }
    return "";
  }
  if (t == "Flatten") {
    if (Int(n, "axis", 1) != 1) return "Flatten at an axis other than 1";
    c->op = OpKind::kFlatten;
    return "";
  }
  if (t == "Gather") {
    c->op = OpKind::kGather;
    c->attrs.axis = Int(n, "axis", 0);
    c->inputs = {0, 1};
    return "";
  }
  if (t == "LayerNormalization") {
    if (n.input_size() < 3) return "no bias input";
    const int64_t axis = Int(n, "axis", -1);
    if (axis != -1 && axis != in[0].rank() - 1) return "normalises more than the last axis";
    c->op = OpKind::kLayerNorm;
    c->attrs.epsilon = Float(n, "epsilon", 1e-5f);
    c->inputs = {0, 1, 2};
    return "";  // Y only: the saved mean and inverse deviation are not outputs here
  }
  if (t == "ReduceSum" || t == "ReduceMean") {
    c->op = t == "ReduceSum" ? OpKind::kReduceSum : OpKind::kReduceMean;
    c->attrs.axes = n.input_size() > 1 ? IntInput(in, 1) : Ints(n, "axes");
    if (c->attrs.axes.empty() && Int(n, "noop_with_empty_axes", 0) != 0) {
      return "noop_with_empty_axes (no axes: the identity)";
    }
    c->attrs.keep_dims = Int(n, "keepdims", 1) != 0;
    return "";
  }
  if (t == "AveragePool") {
    const std::vector<int64_t> k = Ints(n, "kernel_shape"), s = Ints(n, "strides"),
                               pads = Ints(n, "pads");
    if (k.size() != 2) return std::to_string(k.size()) + "-d pooling (Shardscope pools 2-d)";
    if (Int(n, "ceil_mode", 0) != 0) return "ceil_mode";
    if (Int(n, "count_include_pad", 0) != 0) return "count_include_pad";
    const std::string pad = Attr(n, "auto_pad") ? Attr(n, "auto_pad")->s() : "NOTSET";
    const bool no_pads = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
    if (pad == "SAME_UPPER") {
      c->attrs.padding = Padding::kSame;
    } else if ((pad == "NOTSET" || pad == "VALID") && no_pads) {
      c->attrs.padding = Padding::kValid;
    } else {
      return "padding " + pad + (no_pads ? "" : " with explicit pads") +
             " (Shardscope pads valid or same-upper)";
    }
    c->op = OpKind::kAveragePool2D;
    for (int d = 0; d < 2; ++d) {
      c->attrs.kernel[d] = k[d];
      c->attrs.stride[d] = s.empty() ? 1 : s[d];
    }
    return "";
  }
  if (t == "GlobalAveragePool") {  // a mean over the spatial axes, kept
    c->op = OpKind::kReduceMean;
    c->attrs.keep_dims = true;
    for (int d = 2; d < in[0].rank(); ++d) c->attrs.axes.push_back(d);
    return "";
  }
  if (t == "BatchNormalization") {
    c->op = OpKind::kBatchNorm;
    c->attrs.epsilon = Float(n, "epsilon", 1e-5f);
    c->batch_statistics = Int(n, "training_mode", 0) != 0;
    c->inputs = c->batch_statistics ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1, 2, 3, 4};
    return "";  // Y only: the updated running statistics are not outputs here
  }
  return "operator " + t + " is not mapped";
}

}  // namespace shardscope::onnx_cases

// Operator attributes in model files: which keys each operator takes, and reading them into
// OpAttrs (the attribute table of docs/model-format.md).
#include "model_file_internal.h"

namespace shardscope::model_file {

std::vector<std::string> OpAttrKeys(OpKind op) {
  switch (op) {
    case OpKind::kMatMul:
    case OpKind::kBatchMatMul:
      return {"transpose_a", "transpose_b"};
    case OpKind::kReduceSum:
    case OpKind::kReduceMean:
      return {"axis", "keep_dims"};
    case OpKind::kTranspose:
      return {"perm"};
    case OpKind::kSoftmax:
    case OpKind::kSoftmaxGrad:
    case OpKind::kLogSoftmax:
    case OpKind::kLogSoftmaxGrad:
    case OpKind::kGather:
      return {"axis"};
    case OpKind::kGatherGrad:
      return {"axis", "shape"};
    case OpKind::kReshape:
    case OpKind::kBroadcastTo:
    case OpKind::kSumToShape:
      return {"shape"};
    case OpKind::kConcat:
      return {"axis"};
    case OpKind::kSplit:
      return {"axis", "sizes"};
    case OpKind::kSlice:
      return {"axes", "starts", "ends", "steps"};
    case OpKind::kSliceGrad:
      return {"axes", "starts", "ends", "steps", "shape"};
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return {"axes"};
    case OpKind::kCast:
      return {"to"};
    case OpKind::kPowGrad:
      return {"operand"};
    case OpKind::kConv2D:
      return {"stride", "pad_mode"};
    case OpKind::kConv2DBackpropInput:
    case OpKind::kConv2DBackpropFilter:
      return {"shape", "stride", "pad_mode"};
    case OpKind::kMaxPool2D:
    case OpKind::kMaxPool2DGrad:
    case OpKind::kAveragePool2D:
      return {"kernel_size", "stride", "pad_mode"};
    case OpKind::kAveragePool2DGrad:
      return {"kernel_size", "stride", "pad_mode", "shape"};
    case OpKind::kScale:
      return {"scale"};
    case OpKind::kDropout:
    case OpKind::kDropoutGrad:
      return {"p", "keep_prob", "seed"};
    case OpKind::kLayerNorm:
    case OpKind::kLayerNormGrad:
    case OpKind::kBatchNorm:
    case OpKind::kBatchNormGrad:
      return {"epsilon"};
    default:
      return {};
  }
}

std::vector<std::string> OpNames() {
  std::vector<std::string> names;
  for (int i = 0; i < kNumOps; ++i) names.push_back(OpName(static_cast<OpKind>(i)));
  return names;
}

OpKind ReadOpKind(const Source& src, const YAML::Node& node, const std::string& what) {
  const std::string name = ReadString(src, node, what);
  Result<OpKind> kind = OpFromName(name);
  if (!kind.ok()) {
    src.Fail(node, "unknown operator '" + name + "' for " + what + DidYouMean(name, OpNames()) +
                       "; known: " + Join(OpNames()));
  }
  return *kind;
}

// Dropout's rate from p (drop probability) or keep_prob (the older MindSpore argument).
float ReadDropoutRate(const Source& src, const Map& m, const std::string& what) {
  const Field* p = m.Find("p");
  const Field* keep = m.Find("keep_prob");
  if (p != nullptr && keep != nullptr) {
    src.Fail(keep->key_node, what + ": give p (drop probability) or keep_prob, not both");
  }
  if (p != nullptr) {
    const double v = ReadFloat(src, p->value, "'p' of " + what);
    if (v < 0.0 || v >= 1.0) src.Fail(p->value, "'p' of " + what + " must be in [0, 1)");
    return static_cast<float>(v);
  }
  if (keep != nullptr) {
    const double v = ReadFloat(src, keep->value, "'keep_prob' of " + what);
    if (v <= 0.0 || v > 1.0) src.Fail(keep->value, "'keep_prob' of " + what + " must be in (0, 1]");
    return static_cast<float>(1.0 - v);
  }
  return 0.5f;
}

uint64_t ReadSeed(const Source& src, const Map& m, const std::string& what) {
  const Field* f = m.Find("seed");
  return f == nullptr ? 0
                      : static_cast<uint64_t>(ReadNonNegative(src, f->value, "'seed' of " + what));
}

OpAttrs ReadOpAttrs(const Source& src, const Map& m, OpKind op, const std::string& what) {
  OpAttrs a;
  auto key = [&](const std::string& k) { return "'" + k + "' of " + what; };
  for (const Field& f : m.fields()) {
    const std::string& k = f.key;
    if (k == "transpose_a") {
      a.transpose_a = ReadBool(src, f.value, key(k));
    } else if (k == "transpose_b") {
      a.transpose_b = ReadBool(src, f.value, key(k));
    } else if (k == "axis") {
      if (op == OpKind::kReduceSum || op == OpKind::kReduceMean) {
        if (f.value.IsSequence()) {
          for (size_t i = 0; i < f.value.size(); ++i)
            a.axes.push_back(ReadInt(src, f.value[i], key(k)));
        } else {
          a.axes.push_back(ReadInt(src, f.value, key(k)));
        }
      } else {
        a.axis = ReadInt(src, f.value, key(k));
      }
    } else if (k == "axes" || k == "starts" || k == "ends" || k == "steps" || k == "sizes") {
      std::vector<int64_t>& list = k == "axes"     ? a.axes
                                   : k == "starts" ? a.starts
                                   : k == "ends"   ? a.ends
                                   : k == "steps"  ? a.steps
                                                   : a.sizes;
      if (!f.value.IsSequence()) src.Fail(f.value, key(k) + " must be a list such as [0, 2]");
      for (size_t i = 0; i < f.value.size(); ++i) list.push_back(ReadInt(src, f.value[i], key(k)));
    } else if (k == "to") {
      const std::string t = ReadString(src, f.value, key(k));
      if (t != "f32" && t != "i32") src.Fail(f.value, key(k) + " must be f32 or i32, got " + t);
      a.dtype = t == "f32" ? DType::kF32 : DType::kI32;
    } else if (k == "operand") {
      a.operand = static_cast<int>(ReadNonNegative(src, f.value, key(k)));
    } else if (k == "keep_dims") {
      a.keep_dims = ReadBool(src, f.value, key(k));
    } else if (k == "perm") {
      if (!f.value.IsSequence()) src.Fail(f.value, key(k) + " must be a list such as [1, 0]");
      for (size_t i = 0; i < f.value.size(); ++i) {
        a.axes.push_back(ReadNonNegative(src, f.value[i], key(k)));
      }
    } else if (k == "shape") {
      a.shape = ReadShape(src, f.value, key(k), op == OpKind::kReshape);
    } else if (k == "stride") {
      const std::vector<int64_t> s = ReadIntOrPair(src, f.value, key(k));
      a.stride[0] = s[0];
      a.stride[1] = s[1];
    } else if (k == "kernel_size") {
      const std::vector<int64_t> s = ReadIntOrPair(src, f.value, key(k));
      a.kernel[0] = s[0];
      a.kernel[1] = s[1];
    } else if (k == "pad_mode") {
      a.padding = ReadPadMode(src, f.value, key(k));
    } else if (k == "scale") {
      a.scale = static_cast<float>(ReadFloat(src, f.value, key(k)));
    } else if (k == "epsilon") {
      const double e = ReadFloat(src, f.value, key(k));
      if (e <= 0.0) src.Fail(f.value, key(k) + " must be positive");
      a.epsilon = static_cast<float>(e);
    } else if (k == "seed") {
      a.seed = ReadSeed(src, m, what);
    }
  }
  if (op == OpKind::kDropout || op == OpKind::kDropoutGrad) a.rate = ReadDropoutRate(src, m, what);
  return a;
}

}  // namespace shardscope::model_file

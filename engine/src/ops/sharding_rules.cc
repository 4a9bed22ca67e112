// Sharding rules (sharding_rule.h) of every operator, as dimension-letter signatures.
#include <algorithm>

#include "ops/op_registry.h"
#include "ops/slice_concat.h"
#include "shardscope/sharding_rule.h"

namespace shardscope {
namespace {

constexpr const char* kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

// Hands out fresh letters; a rule may ask for a mnemonic one (MatMul's m, k, n), which
// also names the axes of the mesh a split strategy makes.
class Letters {
 public:
  char Next(char want = 0) {
    if (want != 0 && used_.find(want) == std::string::npos) return Use(want);
    while (used_.find(kLetters[next_]) != std::string::npos) ++next_;
    return Use(kLetters[next_]);
  }
  std::string Next(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += Next();
    return s;
  }

 private:
  char Use(char c) {
    used_ += c;
    return c;
  }
  std::string used_;
  int next_ = 0;
};

using Sig = ShardingSignature;
using In = std::span<const ValueInfo>;

// Elementwise over equal shapes: every operand has the same letters.
Sig SameLetters(In in, size_t outputs = 1) {
  Letters l;
  const std::string s = l.Next(in[0].shape.size());
  Sig sig;
  sig.inputs.assign(in.size(), s);
  sig.outputs.assign(outputs, s);
  sig.batch = s.empty() ? 0 : s[0];
  return sig;
}

// Numpy broadcasting: output letters; an input's size-1 dimension that broadcasts gets its
// own letter and stays whole.
Sig Broadcasting(In in, const Shape& out) {
  Letters l;
  const std::string o = l.Next(out.size());
  Sig sig;
  for (const ValueInfo& v : in) {
    std::string s;
    const size_t lead = out.size() - v.shape.size();
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d] == 1 && out[lead + d] != 1) {
        s += l.Next();
        sig.whole += s.back();
      } else {
        s += o[lead + d];
      }
    }
    sig.inputs.push_back(s);
  }
  sig.outputs.push_back(o);
  sig.batch = o.empty() ? 0 : o[0];
  return sig;
}

// Letters of a product operand "…mk" after its transpose flag.
std::string Operand(const std::string& batch, char rows, char cols, bool transposed) {
  return batch + (transposed ? std::string{cols, rows} : std::string{rows, cols});
}

// numpy.matmul: output batch letters; an operand's broadcast (size-1) batch dimension gets
// its own whole letter; a vector operand has no m (first) or n (second) letter.
Sig MatMulRule(const OpAttrs& a, const Shape& x, const Shape& y, const Shape& out) {
  Letters l;
  Sig sig;
  const char m = l.Next('m'), k = l.Next('k'), n = l.Next('n');
  const size_t batch = out.size() - (x.size() > 1) - (y.size() > 1);
  const std::string b = l.Next(batch);
  auto operand_batch = [&](const Shape& s) {
    std::string letters;
    const size_t rank = s.size() - 2, lead = batch - rank;
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] == 1 && out[lead + d] != 1) {
        letters += l.Next();
        sig.whole += letters.back();
      } else {
        letters += b[lead + d];
      }
    }
    return letters;
  };
  sig.inputs.push_back(x.size() == 1 ? std::string{k}
                                     : Operand(operand_batch(x), m, k, a.transpose_a));
  sig.inputs.push_back(y.size() == 1 ? std::string{k}
                                     : Operand(operand_batch(y), k, n, a.transpose_b));
  sig.outputs = {b + (x.size() > 1 ? std::string{m} : "") + (y.size() > 1 ? std::string{n} : "")};
  sig.batch = !b.empty() ? b[0] : x.size() > 1 ? m : 0;
  return sig;
}

// Concat (the pieces are inputs) or Split (outputs): the pieces share their letters but
// along the axis, where each piece and the whole have their own letter, whole.
Sig AlongAxis(int64_t axis, In pieces, bool pieces_are_inputs) {
  Letters l;
  const int rank = static_cast<int>(pieces[0].shape.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  std::string shared = l.Next(static_cast<size_t>(rank));
  Sig sig;
  auto with_own_axis = [&]() {
    std::string s = shared;
    s[ax] = l.Next();
    sig.whole += s[ax];
    return s;
  };
  std::vector<std::string> parts;
  for (size_t i = 0; i < pieces.size(); ++i) parts.push_back(with_own_axis());
  const std::string whole = with_own_axis();
  sig.inputs = pieces_are_inputs ? parts : std::vector<std::string>{whole};
  sig.outputs = pieces_are_inputs ? std::vector<std::string>{whole} : parts;
  sig.batch = ax == 0 ? 0 : shared[0];
  return sig;
}

// Slice (input x → output) or SliceGrad (dy → dx): a dimension the slice narrows has a
// letter per side, whole; the others keep theirs.
Result<Sig> SliceRule(const OpAttrs& a, const Shape& x, bool forward) {
  SHARDSCOPE_ASSIGN_OR_RETURN(std::vector<SliceRange> r, SliceRanges(a, x));
  Letters l;
  const std::string full = l.Next(x.size());
  std::string part = full;
  Sig sig;
  for (size_t d = 0; d < x.size(); ++d) {
    if (r[d].start == 0 && r[d].step == 1 && r[d].length == x[d]) continue;
    part[d] = l.Next();
    sig.whole += std::string{full[d], part[d]};
  }
  sig.inputs = {forward ? full : part};
  sig.outputs = {forward ? part : full};
  sig.batch = full.empty() || sig.whole.find(full[0]) != std::string::npos ? 0 : full[0];
  return sig;
}

// Reshape: dimensions grouped by equal running products; in each group the first input
// dimension's letter carries over to the group's first output dimension (a split of the
// most significant dimension stays contiguous), the rest stay whole.
Sig ReshapeLike(const Shape& in, const Shape& out) {
  Letters l;
  Sig sig;
  std::string si(in.size(), ' '), so(out.size(), ' ');
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    // Skip size-1 dimensions on either side: their own letters, whole.
    if (i < in.size() && in[i] == 1 && !(o < out.size() && out[o] == 1)) {
      si[i++] = l.Next();
      sig.whole += si[i - 1];
      continue;
    }
    if (o < out.size() && out[o] == 1 && !(i < in.size() && in[i] == 1)) {
      so[o++] = l.Next();
      sig.whole += so[o - 1];
      continue;
    }
    if (i >= in.size() || o >= out.size()) break;
    const size_t gi = i, go = o;
    int64_t pi = in[i++], po = out[o++];
    while (pi != po) {
      if (pi < po)
        pi *= in[i++];
      else
        po *= out[o++];
    }
    const char lead = l.Next();
    si[gi] = lead;
    so[go] = lead;
    for (size_t k = gi + 1; k < i; ++k) sig.whole += (si[k] = l.Next());
    for (size_t k = go + 1; k < o; ++k) sig.whole += (so[k] = l.Next());
  }
  sig.inputs = {si};
  sig.outputs = {so};
  sig.batch = si.empty() ? 0 : si[0];
  return sig;
}

Result<Sig> Rule(OpKind op, const OpAttrs& a, In in, In out) {
  Letters l;
  Sig sig;
  switch (op) {
    case OpKind::kMatMul:
      return MatMulRule(a, in[0].shape, in[1].shape, out[0].shape);
    case OpKind::kBatchMatMul: {
      const char m = l.Next('m'), k = l.Next('k'), n = l.Next('n');
      const std::string b = l.Next(in[0].shape.size() - 2);
      sig.inputs = {Operand(b, m, k, a.transpose_a), Operand(b, k, n, a.transpose_b)};
      sig.outputs = {b + std::string{m, n}};
      sig.batch = b.empty() ? m : b[0];
      return sig;
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kWhere:
      return Broadcasting(in, out[0].shape);
    case OpKind::kPowGrad:  // dy has the output's shape: its letters
      return Broadcasting(in, in[0].shape);
    case OpKind::kConcat:
    case OpKind::kSplit:
      return AlongAxis(a.axis, op == OpKind::kConcat ? in : out, op == OpKind::kConcat);
    case OpKind::kSlice:
    case OpKind::kSliceGrad: {
      const bool fwd = op == OpKind::kSlice;
      return SliceRule(a, fwd ? in[0].shape : out[0].shape, fwd);
    }
    case OpKind::kBroadcastTo: {
      sig = Broadcasting(in, out[0].shape);
      return sig;
    }
    case OpKind::kSumToShape: {
      // The reverse of broadcasting: input letters; summed dimensions vanish (partial).
      Sig b = Broadcasting(out, in[0].shape);
      sig.inputs = b.outputs;
      sig.outputs = b.inputs;
      sig.whole = b.whole;
      sig.batch = b.batch;
      return sig;
    }
    case OpKind::kBiasAdd: {
      const std::string x = l.Next(in[0].shape.size());
      sig.inputs = {x, std::string{x[1]}};
      sig.outputs = {x};
      sig.batch = x[0];
      return sig;
    }
    case OpKind::kScale:
    case OpKind::kSqrt:
    case OpKind::kCast:
    case OpKind::kIdentity:
    case OpKind::kTanh:
    case OpKind::kTanhGrad:
    case OpKind::kSigmoid:
    case OpKind::kSigmoidGrad:
    case OpKind::kReLU:
    case OpKind::kReLUGrad:
    case OpKind::kGeLU:
    case OpKind::kGeLUGrad:
    case OpKind::kDropout:
    case OpKind::kDropoutGrad:
      return SameLetters(in);
    case OpKind::kSoftmax:
    case OpKind::kSoftmaxGrad:
    case OpKind::kLogSoftmax:
    case OpKind::kLogSoftmaxGrad:
      sig = SameLetters(in);
      sig.whole = sig.inputs[0].substr(sig.inputs[0].size() - 1);
      return sig;
    case OpKind::kSoftmaxCrossEntropyWithLogits: {
      const char n = l.Next('n'), c = l.Next('c');
      sig.inputs = {std::string{n, c}, std::string{n}};
      sig.outputs = {""};
      sig.whole = std::string{c};
      sig.batch = n;
      return sig;
    }
    case OpKind::kSoftmaxCrossEntropyGrad: {
      const char n = l.Next('n'), c = l.Next('c');
      sig.inputs = {"", std::string{n, c}, std::string{n}};
      sig.outputs = {std::string{n, c}};
      sig.whole = std::string{c};
      sig.batch = n;
      return sig;
    }
    case OpKind::kReduceSum:
    case OpKind::kReduceMean: {
      const std::string x = l.Next(in[0].shape.size());
      std::vector<bool> reduced(x.size(), a.axes.empty());
      for (int64_t ax : a.axes) reduced[ax < 0 ? ax + x.size() : ax] = true;
      std::string y;
      for (size_t d = 0; d < x.size(); ++d) {
        if (!reduced[d]) {
          y += x[d];
        } else if (a.keep_dims) {
          y += l.Next();
          sig.whole += y.back();
        }
      }
      sig.inputs = {x};
      sig.outputs = {y};
      sig.batch = x.empty() ? 0 : x[0];
      return sig;
    }
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return ReshapeLike(in[0].shape, out[0].shape);
    case OpKind::kTranspose: {
      const std::string x = l.Next(in[0].shape.size());
      std::string y;
      for (int64_t p : a.axes) y += x[p];
      sig.inputs = {x};
      sig.outputs = {y};
      sig.batch = x.empty() ? 0 : x[0];
      return sig;
    }
    case OpKind::kConv2D:                  // x nchw, w ocij -> y nohw
    case OpKind::kConv2DBackpropInput:     // dy nohw, w ocij -> dx nchw
    case OpKind::kConv2DBackpropFilter: {  // dy nohw, x nchw -> dw ocij
      // The window letters (h, w, i, j and the output's) stay whole.
      const char n = l.Next('n'), c = l.Next('c'), h = l.Next('h'), w = l.Next('w'),
                 o = l.Next('o'), i = l.Next('i'), j = l.Next('j'), oh = l.Next('y'),
                 ow = l.Next('x');
      const std::string x{n, c, h, w}, weight{o, c, i, j}, y{n, o, oh, ow};
      if (op == OpKind::kConv2D) {
        sig.inputs = {x, weight};
        sig.outputs = {y};
      } else if (op == OpKind::kConv2DBackpropInput) {
        sig.inputs = {y, weight};
        sig.outputs = {x};
      } else {
        sig.inputs = {y, x};
        sig.outputs = {weight};
      }
      sig.whole = std::string{h, w, i, j, oh, ow};
      sig.batch = n;
      return sig;
    }
    case OpKind::kMaxPool2D:
    case OpKind::kMaxPool2DGrad:  // nchw -> nc h'w' ; grad: (dy nc h'w', x nchw) -> nchw
    case OpKind::kAveragePool2D:
    case OpKind::kAveragePool2DGrad: {  // grad: dy nc h'w' -> nchw
      const char n = l.Next('n'), c = l.Next('c'), h = l.Next('h'), w = l.Next('w'),
                 oh = l.Next('y'), ow = l.Next('x');
      const std::string x{n, c, h, w}, y{n, c, oh, ow};
      const bool fwd = op == OpKind::kMaxPool2D || op == OpKind::kAveragePool2D;
      sig.inputs = fwd                            ? std::vector<std::string>{x}
                   : op == OpKind::kMaxPool2DGrad ? std::vector<std::string>{y, x}
                                                  : std::vector<std::string>{y};
      sig.outputs = {fwd ? y : x};
      sig.whole = std::string{h, w, oh, ow};
      sig.batch = n;
      return sig;
    }
    case OpKind::kGather: {  // table vd, indices b… -> b…d ; a split v is a masked lookup
      const char v = l.Next('v'), d = l.Next('d');
      const std::string b = l.Next(in[1].shape.size());
      sig.inputs = {std::string{v, d}, b};
      sig.outputs = {b + d};
      sig.batch = b.empty() ? 0 : b[0];
      return sig;
    }
    case OpKind::kGatherGrad: {  // dy b…d, indices b… -> table vd
      const char v = l.Next('v'), d = l.Next('d');
      const std::string b = l.Next(in[1].shape.size());
      sig.inputs = {b + d, b};
      sig.outputs = {std::string{v, d}};
      sig.batch = b.empty() ? 0 : b[0];
      return sig;
    }
    case OpKind::kLayerNorm: {
      const std::string x = l.Next(in[0].shape.size());
      const std::string d(1, x.back());
      sig.inputs = {x, d, d};
      sig.outputs = {x};
      sig.whole = d;
      sig.batch = x[0];
      return sig;
    }
    case OpKind::kLayerNormGrad: {
      const std::string x = l.Next(in[1].shape.size());
      const std::string d(1, x.back());
      sig.inputs = {x, x, d};
      sig.outputs = {x, d, d};
      sig.whole = d;
      sig.batch = x[0];
      return sig;
    }
    case OpKind::kBatchNorm:
    case OpKind::kBatchNormGrad: {  // statistics per channel c; the gradients' sums partial
      const std::string x = l.Next(in[0].shape.size());
      const std::string c(1, x[1]);
      if (op == OpKind::kBatchNorm) {
        sig.inputs = {x, c, c, c, c};
        sig.outputs = {x};
      } else {
        sig.inputs = {x, x, c, c, c};
        sig.outputs = {x, c, c, c, c};
      }
      sig.batch = x[0];
      return sig;
    }
    case OpKind::kCount:
      break;
  }
  return Status::Internal(std::string("no sharding rule for ") + OpName(op));
}

}  // namespace

std::string ShardingSignature::ToString() const {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? "," : "") + inputs[i];
  s += "->";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? "," : "") + outputs[i];
  if (!whole.empty()) s += "|" + whole;
  return s;
}

Result<ShardingSignature> GetShardingSignature(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  std::vector<ValueInfo> in, out;
  for (ValueId v : node.inputs) in.push_back({graph.value(v).shape, graph.value(v).dtype});
  for (ValueId v : node.outputs) out.push_back({graph.value(v).shape, graph.value(v).dtype});
  auto sig = Rule(node.op, node.attrs, in, out);
  if (!sig.ok()) return sig.status().WithContext("operator '" + node.name + "'");
  // Every operand's letters must match its rank (a broken rule is a bug, not bad input).
  for (size_t i = 0; i < in.size(); ++i) {
    if (sig->inputs[i].size() != in[i].shape.size()) {
      return Status::Internal("sharding rule of " + node.name + " mislabels input " +
                              std::to_string(i));
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (sig->outputs[i].size() != out[i].shape.size()) {
      return Status::Internal("sharding rule of " + node.name + " mislabels output " +
                              std::to_string(i));
    }
  }
  return sig;
}

}  // namespace shardscope

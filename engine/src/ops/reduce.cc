// ReduceSum and ReduceMean over a set of axes (empty = all), with or without keep_dims.
#include <algorithm>

#include "autodiff/grad_context.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {
namespace {

// The reduced axes, normalised and sorted; all axes when none are given.
Result<std::vector<int64_t>> ReducedAxes(const OpAttrs& a, int rank) {
  std::vector<int64_t> axes;
  if (a.axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t ax : a.axes) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(ax, rank));
    if (std::find(axes.begin(), axes.end(), n) != axes.end()) {
      return Status::Invalid("axis " + std::to_string(ax) + " listed twice");
    }
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

Shape KeptShape(const Shape& in, const std::vector<int64_t>& axes) {
  Shape s = in;
  for (int64_t a : axes) s[a] = 1;
  return s;
}

Status ReduceShape(const OpAttrs& a, std::span<const ValueInfo> in, std::vector<ValueInfo>* out) {
  SHARDSCOPE_ASSIGN_OR_RETURN(auto axes, ReducedAxes(a, static_cast<int>(in[0].shape.size())));
  Shape s;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      s.push_back(in[0].shape[d]);
    else if (a.keep_dims)
      s.push_back(1);
  }
  out->push_back({s});
  return Status::Ok();
}

void ReduceKernel(const KernelContext& k, bool mean) {
  const Tensor& x = *k.in[0];
  Tensor& y = *k.out[0];
  const auto axes = ReducedAxes(k.attrs, x.rank()).value();
  const Shape kept = KeptShape(x.shape(), axes);
  y.Fill(0.0f);
  float* py = y.data();
  const float* px = x.data();
  ForEachBroadcast(kept, x.shape(), [&](int64_t i, int64_t j) { py[j] += px[i]; });
  if (mean && y.size() > 0) {
    const int64_t count = k.attrs.mean_count > 0 ? k.attrs.mean_count : x.size() / y.size();
    Flat(y) /= static_cast<float>(count);
  }
}

Status ReduceGrad(GradContext& g, bool mean) {
  const Shape xs = g.shape(g.input(0));  // a copy: Emit below may move the graph's values
  SHARDSCOPE_ASSIGN_OR_RETURN(auto axes, ReducedAxes(g.attrs(), static_cast<int>(xs.size())));
  ValueId d = g.output_grad();
  OpAttrs reshape;
  reshape.shape = KeptShape(xs, axes);
  SHARDSCOPE_ASSIGN_OR_RETURN(d, g.Emit(OpKind::kReshape, "keep_dims", {d}, reshape));
  OpAttrs bcast;
  bcast.shape = xs;
  SHARDSCOPE_ASSIGN_OR_RETURN(d, g.Emit(OpKind::kBroadcastTo, "dx", {d}, bcast));
  if (mean) {
    OpAttrs scale;
    scale.scale =
        static_cast<float>(NumElements(reshape.shape)) / static_cast<float>(NumElements(xs));
    SHARDSCOPE_ASSIGN_OR_RETURN(d, g.Emit(OpKind::kScale, "dx_mean", {d}, scale));
  }
  g.SetInputGrad(0, d);
  return Status::Ok();
}

}  // namespace

Status ReduceSumShape(const OpAttrs& a, std::span<const ValueInfo> in,
                      std::vector<ValueInfo>* out) {
  return ReduceShape(a, in, out);
}
void ReduceSumForward(const KernelContext& k) { ReduceKernel(k, false); }
Status ReduceSumGrad(GradContext& g) { return ReduceGrad(g, false); }

Status ReduceMeanShape(const OpAttrs& a, std::span<const ValueInfo> in,
                       std::vector<ValueInfo>* out) {
  return ReduceShape(a, in, out);
}
void ReduceMeanForward(const KernelContext& k) { ReduceKernel(k, true); }
Status ReduceMeanGrad(GradContext& g) { return ReduceGrad(g, true); }

}  // namespace shardscope

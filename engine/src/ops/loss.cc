// SoftmaxCrossEntropyWithLogits: sparse int32 labels, mean over the batch.
#include <cmath>

#include "autodiff/grad_context.h"
#include "ops/kernel_util.h"
#include "ops/op_registry.h"

namespace shardscope {
namespace {

Status CheckLogitsLabels(const ValueInfo& logits, const ValueInfo& labels) {
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("logits", logits.shape, 2));
  SHARDSCOPE_RETURN_IF_ERROR(ExpectRank("labels", labels.shape, 1));
  if (labels.dtype != DType::kI32) return Status::Invalid("labels must be i32");
  if (labels.shape[0] != logits.shape[0]) {
    return Status::Invalid("logits " + ShapeToString(logits.shape) + " and labels " +
                           ShapeToString(labels.shape) + " differ in batch size");
  }
  return Status::Ok();
}

}  // namespace

// loss = mean_i (logsumexp(logits_i) − logits_i[label_i]); out-of-range labels count as 0
// probability mass (the kernel clamps them; the data loader rejects them earlier).
Status SoftmaxCrossEntropyWithLogitsShape(const OpAttrs&, std::span<const ValueInfo> in,
                                          std::vector<ValueInfo>* out) {
  SHARDSCOPE_RETURN_IF_ERROR(CheckLogitsLabels(in[0], in[1]));
  out->push_back({{}});
  return Status::Ok();
}
void SoftmaxCrossEntropyWithLogitsForward(const KernelContext& k) {
  const Tensor& logits = *k.in[0];
  const int32_t* labels = k.in[1]->ints();
  const int64_t n = logits.dim(0), c = logits.dim(1);
  ConstMatMap x = AsMatrix(logits, n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float m = x.row(i).maxCoeff();
    const float lse = m + std::log((x.row(i).array() - m).exp().sum());
    const int64_t label = std::clamp<int64_t>(labels[i], 0, c - 1);
    total += lse - x(i, label);
  }
  const double count =
      k.attrs.mean_count > 0 ? static_cast<double>(k.attrs.mean_count) : static_cast<double>(n);
  (*k.out[0])[0] = static_cast<float>(total / count);
}
Status SoftmaxCrossEntropyWithLogitsGrad(GradContext& g) {
  if (!g.needs_grad(0)) return Status::Ok();
  SHARDSCOPE_ASSIGN_OR_RETURN(ValueId d, g.Emit(OpKind::kSoftmaxCrossEntropyGrad, "dlogits",
                                                {g.output_grad(), g.input(0), g.input(1)}));
  g.SetInputGrad(0, d);
  return Status::Ok();
}

// SoftmaxCrossEntropyGrad(dloss, logits, labels) = dloss·(softmax(logits) − onehot)/N.
Status SoftmaxCrossEntropyGradShape(const OpAttrs&, std::span<const ValueInfo> in,
                                    std::vector<ValueInfo>* out) {
  if (!in[0].shape.empty()) return Status::Invalid("dloss must be a scalar");
  SHARDSCOPE_RETURN_IF_ERROR(CheckLogitsLabels(in[1], in[2]));
  out->push_back({in[1].shape});
  return Status::Ok();
}
void SoftmaxCrossEntropyGradForward(const KernelContext& k) {
  const float dloss = (*k.in[0])[0];
  const Tensor& logits = *k.in[1];
  const int32_t* labels = k.in[2]->ints();
  const int64_t n = logits.dim(0), c = logits.dim(1);
  ConstMatMap x = AsMatrix(logits, n);
  MatMap dx = AsMatrix(*k.out[0], n);
  dx = (x.colwise() - x.rowwise().maxCoeff()).array().exp().matrix();
  dx.array().colwise() /= dx.rowwise().sum().array();
  for (int64_t i = 0; i < n; ++i) dx(i, std::clamp<int64_t>(labels[i], 0, c - 1)) -= 1.0f;
  dx *= dloss / static_cast<float>(k.attrs.mean_count > 0 ? k.attrs.mean_count : n);
}
Status SoftmaxCrossEntropyGradGrad(GradContext&) {
  return Status::NotImplemented("second-order gradient of SoftmaxCrossEntropyWithLogits");
}

}  // namespace shardscope

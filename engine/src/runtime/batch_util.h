// Internal: pieces shared by the single-device and the distributed trainer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "shardscope/data.h"
#include "shardscope/tensor.h"

namespace shardscope {

// A tensor's 4-byte elements (f32 or i32) as bytes, to send or copy.
inline std::span<std::byte> TensorBytes(Tensor& t) {
  char* p = t.dtype() == DType::kI32 ? reinterpret_cast<char*>(t.ints())
                                     : reinterpret_cast<char*>(t.data());
  return {reinterpret_cast<std::byte*>(p), static_cast<size_t>(t.size()) * 4};
}

// Copies rows [row, row + dst rows) of `whole` into `dst` (4-byte elements).
inline void CopyRows(const Tensor& whole, int64_t row, Tensor* dst) {
  const int64_t per_row = dst->size() / dst->dim(0);
  const char* src = whole.dtype() == DType::kI32 ? reinterpret_cast<const char*>(whole.ints())
                                                 : reinterpret_cast<const char*>(whole.data());
  std::memcpy(TensorBytes(*dst).data(), src + row * per_row * 4, dst->size() * 4);
}

// Divides micro-batch gradient sums by their count `m`: their mean (nothing when m is 1).
inline void AverageOverMicroBatches(std::vector<Tensor>& sums, int64_t m) {
  if (m <= 1) return;
  const float scale = 1.0f / static_cast<float>(m);
  for (Tensor& sum : sums)
    for (int64_t j = 0; j < sum.size(); ++j) sum[j] *= scale;
}

// Copies examples [start, start + n) of `data` into `batch` (f32 images or i32 token ids,
// both 4 bytes) and zero-fills the rest of the batch.
inline void FillBatch(const Dataset& data, int64_t start, int64_t n, Tensor* batch) {
  const int64_t example = batch->size() / batch->dim(0);
  char* dst = batch->dtype() == DType::kI32 ? reinterpret_cast<char*>(batch->ints())
                                            : reinterpret_cast<char*>(batch->data());
  const char* src = data.images.dtype() == DType::kI32
                        ? reinterpret_cast<const char*>(data.images.ints())
                        : reinterpret_cast<const char*>(data.images.data());
  std::memcpy(dst, src + start * example * 4, 4 * n * example);
  std::memset(dst + n * example * 4, 0, 4 * (batch->dim(0) - n) * example);
}

// How many of the first `n` rows of `logits` [..., classes] pick `labels[i]` (top-1); a
// sequence model's logits [batch, T, classes] have T rows per example.
inline int64_t CountCorrect(const Tensor& logits, const int32_t* labels, int64_t n) {
  const int64_t classes = logits.shape().back();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data() + i * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    correct += best == labels[i];
  }
  return correct;
}

// The summed softmax cross-entropy of the first `n` rows of `logits` [..., classes] against
// `labels` (the mean of it is the loss a classifier trains on).
inline double SumCrossEntropy(const Tensor& logits, const int32_t* labels, int64_t n) {
  const int64_t classes = logits.shape().back();
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data() + i * classes;
    float top = row[0];
    for (int64_t c = 1; c < classes; ++c) top = std::max(top, row[c]);
    double exps = 0;
    for (int64_t c = 0; c < classes; ++c) exps += std::exp(static_cast<double>(row[c] - top));
    sum += std::log(exps) + top - row[labels[i]];
  }
  return sum;
}

}  // namespace shardscope

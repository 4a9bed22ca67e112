// BatchIterator: a deterministic (seed, epoch) Fisher-Yates order, one memcpy per example.

#include <algorithm>
#include <cassert>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "shardscope/data.h"
#include "shardscope/rng.h"

namespace shardscope {

BatchIterator::BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed, bool shuffle,
                             bool drop_remainder)
    : data_(&data),
      batch_size_(batch_size),
      seed_(seed),
      shuffle_(shuffle),
      drop_remainder_(drop_remainder) {
  assert(batch_size >= 1 && "BatchIterator: batch_size must be >= 1");
  assert(data.labels.dtype() == DType::kI32 && data.labels.rank() >= 1 &&
         data.labels.dim(0) == data.size() && "BatchIterator: labels must be i32 [N, ...]");
  Reset(0);
}

void BatchIterator::Reset(int epoch) {
  epoch_ = epoch;
  cursor_ = 0;
  const int64_t n = data_->size();
  order_.resize(static_cast<size_t>(n));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!shuffle_ || n < 2) return;
  // Each epoch's stream is seeded by hashing its name, so epochs are unrelated streams
  // (not shifted copies of one SplitMix sequence).
  Rng rng(DeriveSeed(seed_, "shardscope.data.shuffle.epoch." + std::to_string(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i + 1)));
    std::swap(order_[i], order_[j]);
  }
}

void BatchIterator::Skip(int64_t batches) {
  cursor_ = std::min(data_->size(), cursor_ + std::max<int64_t>(0, batches) * batch_size_);
}

int64_t BatchIterator::batches_per_epoch() const {
  const int64_t n = data_->size();
  return drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

bool BatchIterator::Next(Tensor* images, Tensor* labels) {
  const int64_t remaining = data_->size() - cursor_;
  if (remaining <= 0) return false;
  const int64_t b = remaining < batch_size_ ? remaining : batch_size_;
  if (b < batch_size_ && drop_remainder_) return false;

  Shape shape = data_->example_shape();
  const int64_t example = NumElements(shape);
  shape.insert(shape.begin(), b);
  const DType dtype = data_->images.dtype();  // f32 images, or i32 token ids
  if (images->dtype() != dtype || images->shape() != shape) {
    *images = Tensor(std::move(shape), dtype);
  }
  Shape label_shape = data_->labels.shape();  // [N] or sequence labels [N, T]
  label_shape[0] = b;
  if (labels->dtype() != DType::kI32 || labels->shape() != label_shape) {
    *labels = Tensor(std::move(label_shape), DType::kI32);
  }
  const int64_t per = data_->labels_per_example();

  // Both element types are 4 bytes; copy examples as raw bytes.
  static_assert(sizeof(float) == sizeof(int32_t));
  const char* src = dtype == DType::kF32 ? reinterpret_cast<const char*>(data_->images.data())
                                         : reinterpret_cast<const char*>(data_->images.ints());
  char* dst = dtype == DType::kF32 ? reinterpret_cast<char*>(images->data())
                                   : reinterpret_cast<char*>(images->ints());
  const int32_t* src_labels = data_->labels.ints();
  int32_t* dst_labels = labels->ints();
  const size_t bytes = static_cast<size_t>(example) * sizeof(float);
  for (int64_t k = 0; k < b; ++k) {
    const int64_t idx = order_[static_cast<size_t>(cursor_ + k)];
    std::memcpy(dst + k * bytes, src + idx * bytes, bytes);
    std::memcpy(dst_labels + k * per, src_labels + idx * per, sizeof(int32_t) * per);
  }
  cursor_ += b;
  return true;
}

}  // namespace shardscope

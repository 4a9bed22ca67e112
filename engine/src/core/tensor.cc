#include "shardscope/tensor.h"

#include <cassert>
#include <sstream>
#include <utility>

namespace shardscope {

const char* DTypeName(DType dtype) { return dtype == DType::kF32 ? "f32" : "i32"; }

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

Tensor::Tensor(Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype), size_(NumElements(shape_)) {
  if (dtype_ == DType::kF32) {
    f32_.assign(size_, 0.0f);
  } else {
    i32_.assign(size_, 0);
  }
}

Tensor Tensor::FromVector(Shape shape, std::vector<float> values) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.size_ = NumElements(t.shape_);
  assert(static_cast<int64_t>(values.size()) == t.size_);
  t.f32_.assign(values.begin(), values.end());
  return t;
}

Tensor Tensor::FromInts(Shape shape, std::vector<int32_t> values) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = DType::kI32;
  t.size_ = NumElements(t.shape_);
  assert(static_cast<int64_t>(values.size()) == t.size_);
  t.i32_.assign(values.begin(), values.end());
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  Tensor t = *this;
  t.Reshape(std::move(shape));
  return t;
}

void Tensor::Reshape(Shape shape) {
  assert(NumElements(shape) == size_);
  shape_ = std::move(shape);
}

void Tensor::Fill(float value) {
  assert(dtype_ == DType::kF32);
  f32_.assign(size_, value);
}

}  // namespace shardscope

// Tensor: a dense, row-major N-D array of float32 or int32 on one device.
//
// Value semantics (copying copies the data). Shapes are int64 per dimension; a scalar has
// rank 0 and one element. Kernels read and write the raw buffers through Eigen maps.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace shardscope {

using Shape = std::vector<int64_t>;

enum class DType : uint8_t { kF32, kI32 };
const char* DTypeName(DType dtype);

int64_t NumElements(const Shape& shape);
// "[32, 784]"
std::string ShapeToString(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given shape.
  explicit Tensor(Shape shape, DType dtype = DType::kF32);
  static Tensor FromVector(Shape shape, std::vector<float> values);
  static Tensor FromInts(Shape shape, std::vector<int32_t> values);
  static Tensor Scalar(float value) { return FromVector({}, {value}); }

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t size() const { return size_; }

  float* data() { return f32_.data(); }
  const float* data() const { return f32_.data(); }
  int32_t* ints() { return i32_.data(); }
  const int32_t* ints() const { return i32_.data(); }
  float& operator[](int64_t i) { return f32_[i]; }
  float operator[](int64_t i) const { return f32_[i]; }

  // Same data, new shape with the same element count (asserted).
  Tensor Reshaped(Shape shape) const;
  void Reshape(Shape shape);  // in place; same element count (asserted)
  void Fill(float value);     // f32 tensors only
  std::vector<float> ToVector() const { return {f32_.begin(), f32_.end()}; }

 private:
  Shape shape_;
  DType dtype_ = DType::kF32;
  int64_t size_ = 0;
  // 64-byte aligned: Eigen's vector paths then start at the same element whatever the
  // address, so results are bitwise reproducible (scalar and vector rounding differ).
  std::vector<float, Eigen::aligned_allocator<float>> f32_;
  std::vector<int32_t, Eigen::aligned_allocator<int32_t>> i32_;
};

}  // namespace shardscope

#include "shardscope/checked_math.h"

namespace shardscope {

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> CheckedNumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    auto next = CheckedMul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<int64_t> CheckedBytes(const Shape& shape, int64_t element_bytes) {
  auto n = CheckedNumElements(shape);
  return n ? CheckedMul(*n, element_bytes) : std::nullopt;
}

int64_t DTypeBytes(DType dtype) { return dtype == DType::kF32 ? sizeof(float) : sizeof(int32_t); }

std::string CountText(const Shape& shape) {
  // log2 of the exact product when every dimension is a power of two.
  int log2 = 0;
  for (int64_t d : shape) {
    if (d <= 0 || (d & (d - 1)) != 0) {
      auto n = CheckedNumElements(shape);
      return n ? std::to_string(*n) : "more than 2^63";
    }
    log2 += __builtin_ctzll(static_cast<unsigned long long>(d));
  }
  return "2^" + std::to_string(log2);
}

Status CheckTensorSize(const Shape& shape, int64_t element_bytes, const std::string& what) {
  for (int64_t d : shape) {
    if (d < 0) return Status::Invalid(what + " " + ShapeToString(shape) + " has a negative size");
  }
  if (!CheckedNumElements(shape)) {
    return Status::Invalid(what + " " + ShapeToString(shape) + " has " + CountText(shape) +
                           " elements, which does not fit in 63 bits");
  }
  auto bytes = CheckedBytes(shape, element_bytes);
  if (!bytes || *bytes > kMaxTensorBytes) {
    return Status::Invalid(what + " " + ShapeToString(shape) + " has " + CountText(shape) +
                           " elements of " + std::to_string(element_bytes) +
                           " B, more than 2^56 bytes (64 PiB), the most a tensor may hold");
  }
  return Status::Ok();
}

}  // namespace shardscope

// Checked arithmetic for element counts, byte counts and memory.
//
// Every product or sum of counts that can come from user input goes through these: the
// result, or nullopt when it would not fit in 63 bits (a non-negative int64_t). Operands
// must be non-negative. Callers turn nullopt into a Status that names what overflowed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

std::optional<int64_t> CheckedMul(int64_t a, int64_t b);
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b);
// The product of the dimensions; nullopt for a negative dimension or when it does not fit.
std::optional<int64_t> CheckedNumElements(const Shape& shape);
// Elements x element size.
std::optional<int64_t> CheckedBytes(const Shape& shape, int64_t element_bytes);
int64_t DTypeBytes(DType dtype);

// Graphs and plans keep this headroom below 2^63: what is checked against kMaxTensorBytes
// (one tensor, or a graph's tensors together) can then be multiplied by the small factors of
// memory sums (gradients, optimizer states) and steps without a further check.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 56;  // 64 PiB

// Ok, or kInvalidInput "<what> [..] has 2^64 elements, which does not fit in 63 bits" /
// "... more than 2^56 bytes (64 PiB) ...".
Status CheckTensorSize(const Shape& shape, int64_t element_bytes, const std::string& what);

// "2^64" for powers of two, else the decimal digits: for messages about sizes.
std::string CountText(const Shape& shape);

}  // namespace shardscope

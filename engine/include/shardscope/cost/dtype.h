// Element types for planning: what the byte figures of `plan` (memory per device,
// redistribution bytes) assume. Training itself runs in f32 whatever the dtype; a narrower
// dtype prices mixed precision: weights, gradients and activations in bf16/fp16, an fp32
// master copy of the weights and fp32 optimizer states.
#pragma once

#include <string>

#include "shardscope/status.h"

namespace shardscope {

// The planning dtype (apart from the Tensor element type DType, which stays f32/i32).
enum class Precision { kF32, kBF16, kF16 };

// "f32" (also fp32, float32), "bf16" (bfloat16), "fp16" (f16, float16).
Result<Precision> ParsePrecision(const std::string& name);
const char* PrecisionName(Precision dtype);  // "f32", "bf16", "fp16"
int PrecisionBytes(Precision dtype);         // 4, 2, 2

// Training bytes per parameter: weight and gradient at `dtype`, an fp32 master copy when
// `dtype` is narrower than f32, and `optimizer_states` fp32 state tensors.
double TrainingBytesPerParameter(Precision dtype, int optimizer_states);

}  // namespace shardscope

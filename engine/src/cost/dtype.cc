#include "shardscope/cost/dtype.h"

#include "shardscope/base/names.h"

namespace shardscope {

Result<Precision> ParsePrecision(const std::string& name) {
  if (name == "f32" || name == "fp32" || name == "float32") return Precision::kF32;
  if (name == "bf16" || name == "bfloat16") return Precision::kBF16;
  if (name == "fp16" || name == "f16" || name == "float16") return Precision::kF16;
  return Status::Invalid("unknown dtype '" + name + "'" +
                         DidYouMean(name, {"f32", "bf16", "fp16"}) + " (dtypes: f32, bf16, fp16)");
}

const char* PrecisionName(Precision dtype) {
  switch (dtype) {
    case Precision::kF32:
      return "f32";
    case Precision::kBF16:
      return "bf16";
    case Precision::kF16:
      return "fp16";
  }
  return "?";
}

int PrecisionBytes(Precision dtype) { return dtype == Precision::kF32 ? 4 : 2; }

double TrainingBytesPerParameter(Precision dtype, int optimizer_states) {
  const double narrow = PrecisionBytes(dtype);
  const double master = dtype == Precision::kF32 ? 0 : 4;
  return 2 * narrow + master + 4.0 * optimizer_states;
}

}  // namespace shardscope

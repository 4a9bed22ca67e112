// The operator vocabulary: one enum, one table.
//
// SHARDSCOPE_OP_LIST is the single source of truth. Every operator has, under its own name
// in src/ops/<family>.cc, a shape rule `<Name>Shape`, a forward kernel `<Name>Forward` and a
// gradient rule `<Name>Grad`; the table in src/ops/op_table.cc is generated from this list
// and checked at compile time, so an operator cannot exist without all three.
//
// Backward operators (the *Grad kinds) are ordinary operators: autodiff emits them into the
// graph, and later passes shard and execute them like any other.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

// X(Name, inputs, outputs): inputs/outputs are the arities; kVariadic means any number ≥ 1
// (Concat's inputs, Split's outputs: the attributes or the inputs fix the count).
#define SHARDSCOPE_OP_LIST(X)            \
  /* linear algebra */                   \
  X(MatMul, 2, 1)                        \
  X(BatchMatMul, 2, 1)                   \
  /* elementwise (numpy broadcasting) */ \
  X(Add, 2, 1)                           \
  X(Sub, 2, 1)                           \
  X(Mul, 2, 1)                           \
  X(Div, 2, 1)                           \
  X(Pow, 2, 1)                           \
  X(PowGrad, 3, 1)                       \
  X(Sqrt, 1, 1)                          \
  X(Scale, 1, 1)                         \
  X(BiasAdd, 2, 1)                       \
  X(SumToShape, 1, 1)                    \
  X(Where, 3, 1)                         \
  X(Cast, 1, 1)                          \
  X(Identity, 1, 1)                      \
  /* activations */                      \
  X(ReLU, 1, 1)                          \
  X(ReLUGrad, 2, 1)                      \
  X(GeLU, 1, 1)                          \
  X(GeLUGrad, 2, 1)                      \
  X(Tanh, 1, 1)                          \
  X(TanhGrad, 2, 1)                      \
  X(Sigmoid, 1, 1)                       \
  X(SigmoidGrad, 2, 1)                   \
  X(Softmax, 1, 1)                       \
  X(SoftmaxGrad, 2, 1)                   \
  X(LogSoftmax, 1, 1)                    \
  X(LogSoftmaxGrad, 2, 1)                \
  X(Dropout, 1, 1)                       \
  X(DropoutGrad, 1, 1)                   \
  /* losses */                           \
  X(SoftmaxCrossEntropyWithLogits, 2, 1) \
  X(SoftmaxCrossEntropyGrad, 3, 1)       \
  /* reductions and broadcasts */        \
  X(ReduceSum, 1, 1)                     \
  X(ReduceMean, 1, 1)                    \
  X(BroadcastTo, 1, 1)                   \
  /* shape */                            \
  X(Reshape, 1, 1)                       \
  X(Flatten, 1, 1)                       \
  X(Transpose, 1, 1)                     \
  X(Squeeze, 1, 1)                       \
  X(Unsqueeze, 1, 1)                     \
  X(Concat, kVariadic, 1)                \
  X(Split, 1, kVariadic)                 \
  X(Slice, 1, 1)                         \
  X(SliceGrad, 1, 1)                     \
  /* convolution and pooling (NCHW) */   \
  X(Conv2D, 2, 1)                        \
  X(Conv2DBackpropInput, 2, 1)           \
  X(Conv2DBackpropFilter, 2, 1)          \
  X(MaxPool2D, 1, 1)                     \
  X(MaxPool2DGrad, 2, 1)                 \
  X(AveragePool2D, 1, 1)                 \
  X(AveragePool2DGrad, 1, 1)             \
  /* embeddings and normalisation */     \
  X(Gather, 2, 1)                        \
  X(GatherGrad, 2, 1)                    \
  X(LayerNorm, 3, 1)                     \
  X(LayerNormGrad, 3, 3)                 \
  X(BatchNorm, 5, 1)                     \
  X(BatchNormGrad, 5, 5)

constexpr int kVariadic = -1;

enum class OpKind : uint8_t {
#define SHARDSCOPE_OP_ENUM(name, in, out) k##name,
  SHARDSCOPE_OP_LIST(SHARDSCOPE_OP_ENUM)
#undef SHARDSCOPE_OP_ENUM
      kCount
};
constexpr int kNumOps = static_cast<int>(OpKind::kCount);

const char* OpName(OpKind op);
// The kind named `name` ("MatMul"), or an error listing the known names.
Result<OpKind> OpFromName(const std::string& name);
// The arities, or kVariadic.
int OpNumInputs(OpKind op);
int OpNumOutputs(OpKind op);

// kSame pads the odd element after (TensorFlow's SAME, ONNX's SAME_UPPER), kSameLower before
// (ONNX's SAME_LOWER; PyTorch's symmetric padding of a strided window often equals it).
enum class Padding : uint8_t { kValid, kSame, kSameLower };

// Attributes of one operator. Each kind reads only the fields its comment names.
struct OpAttrs {
  bool transpose_a = false;           // MatMul, BatchMatMul
  bool transpose_b = false;           // MatMul, BatchMatMul
  std::vector<int64_t> axes;          // ReduceSum/Mean (empty = all), Transpose (permutation),
                                      //   Squeeze/Unsqueeze, Slice(+Grad) (the sliced axes)
  bool keep_dims = false;             // ReduceSum, ReduceMean
  int64_t axis = -1;                  // Softmax, LogSoftmax (last axis only), Gather (0 only),
                                      //   Concat, Split
  std::vector<int64_t> sizes;         // Split: the outputs' sizes along axis
  std::vector<int64_t> starts;        // Slice(+Grad): per entry of axes, as ONNX Slice
  std::vector<int64_t> ends;          //   (negative counts from the end; clamped)
  std::vector<int64_t> steps;         //   (empty: all 1)
  DType dtype = DType::kF32;          // Cast: the output's type
  int operand = 0;                    // PowGrad: the gradient of input 0 (base) or 1 (exponent)
  Shape shape;                        // Reshape, BroadcastTo, SumToShape, *Backprop*, GatherGrad,
                                      //   SliceGrad, AveragePool2DGrad: the target / original
                                      //   shape
  int64_t kernel[2] = {1, 1};         // MaxPool2D, AveragePool2D window; Conv2D: the weight's
  int64_t stride[2] = {1, 1};         // Conv2D, MaxPool2D, AveragePool2D
  Padding padding = Padding::kValid;  // Conv2D, MaxPool2D, AveragePool2D
  float scale = 1.0f;                 // Scale; Dropout keep probability is 1 - rate
  float rate = 0.0f;                  // Dropout
  uint64_t seed = 0;                  // Dropout
  float epsilon = 1e-5f;              // LayerNorm (over the last axis), BatchNorm
  // Set by the partitioner on a rank's local copy of an operator (zero/empty otherwise):
  int64_t mean_count = 0;              // ReduceMean, SoftmaxCrossEntropy(+Grad): divide by this
                                       //   global count instead of the local one
  Shape global_shape;                  // Dropout(+Grad): the whole tensor's shape, and
  std::vector<int64_t> shard_offsets;  // the local shard's offsets in it (masks use global
                                       //   indices); Gather(+Grad): [row offset of the table]
  bool operator==(const OpAttrs&) const = default;
};

}  // namespace shardscope

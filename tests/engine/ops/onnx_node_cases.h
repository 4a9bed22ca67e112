// Test support: ONNX node tests (libonnx-testdata) as single Shardscope operators.
//
// MapOnnxNode turns one ONNX node and its input tensors into the Shardscope operator that
// computes it, with attributes; inputs that ONNX passes as tensors but Shardscope takes as
// attributes (Slice's starts, Reshape's shape, ...) are read here, as an importer folds them.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "shardscope/ops.h"
#include "shardscope/tensor.h"

namespace shardscope::onnx_cases {

struct NodeCase {
  OpKind op = OpKind::kIdentity;
  OpAttrs attrs;
  std::vector<int> inputs;        // the ONNX inputs fed to the operator, in its order
  int outputs = 1;                // the leading ONNX outputs compared
  bool batch_statistics = false;  // BatchNormalization training: AddBatchNormTraining
};

// The case, or a skip reason ("" means mapped) naming what Shardscope lacks.
std::string MapOnnxNode(const onnx::NodeProto& node, const std::vector<Tensor>& inputs,
                        NodeCase* out);

// The ONNX operator types MapOnnxNode knows.
const std::vector<std::string>& MappedOnnxOps();

}  // namespace shardscope::onnx_cases

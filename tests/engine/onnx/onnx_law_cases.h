// The ONNX models the correctness law trains (tests/data/onnx, made by make_models.py), with
// the strategies a user gives by ONNX node name; shared by the in-process test and mpirun.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shardscope/data.h"
#include "shardscope/model_file.h"
#include "shardscope/status.h"

namespace shardscope::onnx_law {

constexpr int64_t kBatch = 32;

inline Result<Dataset> Mnist() {
  return LoadIdxDataset(std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist", Split::kTrain, {},
                        kBatch * 5);
}

inline Result<ModelFile> Parse(const std::string& text) {
  return ParseModelText(text, std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/onnx/law.yaml");
}

// Model-file text per case: the MLP, LeNet-5 and the 2-layer Llama-style decoder, each
// data-parallel and with user strategies by node name (`devices` splits them).
inline std::vector<std::pair<std::string, std::string>> Cases(int devices) {
  const std::string d = std::to_string(devices);
  const std::string semi = "parallel:\n  mode: semi_auto\n  strategies:\n";
  return {
      {"mlp", "import: mlp.onnx\n"},
      {"mlp by node name",  // Gemm weights are [out, in] (transB): Megatron's column, row
       "import: mlp.onnx\n" + semi + "    /fc1/Gemm: ((1, 1), (" + d + ", 1))\n" +
           "    /fc2/Gemm: ((1, " + d + "), (1, " + d + "))\n"},
      {"lenet", "import: lenet.onnx\n"},
      {"lenet by node name",  // fc1 by output features
       "import: lenet.onnx\n" + semi + "    /fc1/Gemm: ((1, 1), (" + d + ", 1))\n"},
      {"decoder", "import: decoder.onnx\n"},
      {"decoder by node name",  // SwiGLU column-then-row in layer 0, attention by queries
       "import: decoder.onnx\n" + semi + "    /layers.0/mlp/gate_proj/MatMul: ((1, 1), (1, " + d +
           "))\n" + "    /layers.0/mlp/up_proj/MatMul: ((1, 1), (1, " + d + "))\n" +
           "    /layers.0/mlp/down_proj/MatMul: ((1, " + d + "), (" + d + ", 1))\n"},
  };
}

}  // namespace shardscope::onnx_law

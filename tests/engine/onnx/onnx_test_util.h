// Shared by the ONNX importer's tests: the files of tests/data/onnx (make_models.py), built
// into forward graphs, and PyTorch's own logits on them (<name>.io).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "shardscope/executor.h"
#include "shardscope/model_file.h"

namespace shardscope::onnx_test {

inline std::string DataPath(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/onnx/" + name;
}

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The forward graph of tests/data/onnx/<name> at `batch`.
inline Result<ModelGraph> Build(const std::string& name, int64_t batch, bool weights = true) {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelFile mf,
                              LoadModelFile(DataPath(name), ModelLoadOptions{.weights = weights}));
  return mf.Build(batch);
}

// The model's logits on the reference input of <name>.io, against PyTorch's.
inline void ExpectTorchLogits(const std::string& name) {
  const std::string io = ReadBytes(DataPath(name + ".io"));
  constexpr int64_t kBatch = 3, kIn = 784, kClasses = 10;
  ASSERT_EQ(io.size(), sizeof(float) * kBatch * (kIn + kClasses));
  std::vector<float> x(kBatch * kIn), want(kBatch * kClasses);
  std::memcpy(x.data(), io.data(), x.size() * sizeof(float));
  std::memcpy(want.data(), io.data() + x.size() * sizeof(float), want.size() * sizeof(float));

  auto model = Build(name + ".onnx", kBatch);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Executor ex(model->graph);
  ex.InitializeParameters(1);  // every parameter holds the file's data: the seed is unused
  ex.value(model->input) = Tensor::FromVector({kBatch, 1, 28, 28}, x);
  ex.Run(ex.Schedule({model->logits}), 0, /*training=*/false);
  const Tensor& got = ex.value(model->logits);
  ASSERT_EQ(got.shape(), (Shape{kBatch, kClasses}));
  for (int64_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i]))) << name << " " << i;
  }
}

}  // namespace shardscope::onnx_test

// The correctness law (DESIGN.md §4) on an MLP exported from PyTorch: trained from the
// file's weights on MNIST, 8 in-process devices equal one device, data-parallel and with
// user strategies given by ONNX node name.
#include <gtest/gtest.h>

#include "../partition/law.h"
#include "shardscope/data.h"
#include "shardscope/model_file.h"

namespace shardscope {
namespace {

using testing_law::CheckLaw;

constexpr int64_t kBatch = 32;

Dataset Mnist() {
  auto data = LoadIdxDataset(std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist", Split::kTrain, {},
                             kBatch * 5);
  EXPECT_TRUE(data.ok()) << data.status().message();
  return data.ok() ? std::move(*data) : Dataset{};
}

void ExpectLaw(const std::string& text, int devices) {
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/onnx/law.yaml";
  auto mf = ParseModelText(text, path);
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  const ModelFile& file = *mf;
  Status st = CheckLaw([&file] { return file.Build(kBatch); }, Mnist(), kBatch, devices);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(OnnxLaw, MlpDataParallelOnEightDevices) { ExpectLaw("import: mlp.onnx\n", 8); }

TEST(OnnxLaw, MlpWithStrategiesByNodeName) {
  // Gemm weights are [out, in] (transB): fc1 splits its rows 2 ways and its contraction 4
  // ways; fc2 takes the Megatron row split.
  ExpectLaw(
      "import: mlp.onnx\n"
      "parallel:\n"
      "  mode: semi_auto\n"
      "  strategies:\n"
      "    /fc1/Gemm: ((2, 4), (1, 4))\n"
      "    /fc2/Gemm: ((1, 8), (1, 8))\n",
      8);
}

TEST(OnnxLaw, TransformerStyleMlpOnFourDevices) { ExpectLaw("import: mlp_view.onnx\n", 4); }

}  // namespace
}  // namespace shardscope

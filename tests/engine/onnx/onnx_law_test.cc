// The correctness law (DESIGN.md §4) on models exported from PyTorch: trained from the
// files' weights on MNIST, in-process devices equal one device, data-parallel and with
// user strategies given by ONNX node name (mpirun: onnx_law_mpi_main.cc).
#include <gtest/gtest.h>

#include "../partition/law.h"
#include "onnx_law_cases.h"

namespace shardscope {
namespace {

using testing_law::CheckLaw;

void ExpectLaw(const std::string& text, int devices) {
  auto mf = onnx_law::Parse(text);
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto data = onnx_law::Mnist();
  ASSERT_TRUE(data.ok()) << data.status().message();
  const ModelFile& file = *mf;
  Status st =
      CheckLaw([&file] { return file.Build(onnx_law::kBatch); }, *data, onnx_law::kBatch, devices);
  EXPECT_TRUE(st.ok()) << st.message();
}

// MLP, LeNet-5 and the Llama-style decoder on 8 devices, each data-parallel and with
// strategies by node name.
TEST(OnnxLaw, ExportedModelsOnEightDevices) {
  for (const auto& [name, text] : onnx_law::Cases(8)) {
    SCOPED_TRACE(name);
    ExpectLaw(text, 8);
  }
}

TEST(OnnxLaw, TransformerStyleMlpOnFourDevices) { ExpectLaw("import: mlp_view.onnx\n", 4); }

TEST(OnnxLaw, ElementwiseAndSlicingOnFourDevices) { ExpectLaw("import: ops_mix.onnx\n", 4); }

TEST(OnnxLaw, ResNetBlockOnFourDevices) { ExpectLaw("import: resblock.onnx\n", 4); }

}  // namespace
}  // namespace shardscope

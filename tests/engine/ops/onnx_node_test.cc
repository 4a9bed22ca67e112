// Kernels against ONNX's own reference data: every node test of Debian's libonnx-testdata
// whose operator Shardscope supports runs its inputs through the Shardscope operator (one
// graph node: shape rule, then forward kernel) and must reproduce ONNX's expected outputs
// within float tolerance. The test lists the node tests covered and those skipped, and why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "onnx_node_cases.h"
#include "shardscope/composites.h"
#include "shardscope/executor.h"
#include "shardscope/graph.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;
using onnx_cases::NodeCase;

constexpr const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";

bool ReadProto(const fs::path& path, google::protobuf::Message* msg) {
  std::ifstream f(path, std::ios::binary);
  return f && msg->ParseFromIstream(&f);
}

// A TensorProto as a Tensor: FLOAT as f32; INT32, INT64 (within range) and BOOL as i32.
// Other element types give an error naming them.
Result<Tensor> ToTensor(const onnx::TensorProto& p) {
  Shape shape(p.dims().begin(), p.dims().end());
  const int64_t n = NumElements(shape);
  const std::string& raw = p.raw_data();
  // Values that do not fill the shape (a scalar stored with no data at all) are refused: the
  // node test is reported as skipped with this reason instead of reading past the data.
  const int64_t stored =
      raw.empty() ? std::max({p.float_data_size(), p.int32_data_size(), p.int64_data_size()})
                  : static_cast<int64_t>(raw.size());
  const bool numeric =
      p.data_type() == onnx::TensorProto::FLOAT || p.data_type() == onnx::TensorProto::INT32 ||
      p.data_type() == onnx::TensorProto::BOOL || p.data_type() == onnx::TensorProto::INT64;
  if (numeric && raw.empty() && stored != n)
    return Status::Invalid("a tensor of shape " + ShapeToString(shape) + " stores " +
                           std::to_string(stored) + " values");
  auto raw_values = [&](auto zero) {
    std::vector<decltype(zero)> v(n);
    if (!raw.empty())
      std::memcpy(v.data(), raw.data(), std::min<size_t>(raw.size(), n * sizeof(zero)));
    return v;
  };
  switch (p.data_type()) {
    case onnx::TensorProto::FLOAT: {
      std::vector<float> v = raw.empty()
                                 ? std::vector<float>(p.float_data().begin(), p.float_data().end())
                                 : raw_values(0.0f);
      return Tensor::FromVector(shape, v);
    }
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL: {
      std::vector<int32_t> v(p.int32_data().begin(), p.int32_data().end());
      if (!raw.empty() && p.data_type() == onnx::TensorProto::BOOL) {
        v.assign(raw.begin(), raw.end());
      } else if (!raw.empty()) {
        v = raw_values(int32_t{0});
      }
      return Tensor::FromInts(shape, v);
    }
    case onnx::TensorProto::INT64: {
      std::vector<int64_t> w =
          raw.empty() ? std::vector<int64_t>(p.int64_data().begin(), p.int64_data().end())
                      : raw_values(int64_t{0});
      std::vector<int32_t> v;
      for (int64_t x : w) {
        // Slice ends such as INT64_MAX: saturate (Slice clamps them anyway).
        v.push_back(static_cast<int32_t>(std::clamp<int64_t>(x, INT32_MIN, INT32_MAX)));
      }
      return Tensor::FromInts(shape, v);
    }
    default:
      return Status::NotImplemented("element type " +
                                    onnx::TensorProto::DataType_Name(p.data_type()));
  }
}

// prefix0.pb, prefix1.pb, ... of a test data set.
Result<std::vector<Tensor>> ReadTensors(const fs::path& dir, const std::string& prefix, int n) {
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) {
    onnx::TensorProto p;
    const fs::path path = dir / (prefix + std::to_string(i) + ".pb");
    if (!ReadProto(path, &p)) return Status::Io("cannot read " + path.string());
    SHARDSCOPE_ASSIGN_OR_RETURN(Tensor t, ToTensor(p));
    out.push_back(std::move(t));
  }
  return out;
}

// Runs one node test; "" when it matched, else the mismatch. `skip` gets a reason instead
// when the node test is outside what Shardscope supports.
std::string RunNodeTest(const fs::path& dir, std::string* skip, std::string* op_name) {
  onnx::ModelProto model;
  if (!ReadProto(dir / "model.onnx", &model)) return "cannot parse model.onnx";
  const onnx::GraphProto& graph = model.graph();
  if (graph.node_size() != 1) {
    *skip = std::to_string(graph.node_size()) + " nodes (an expanded function)";
    return "";
  }
  const onnx::NodeProto& node = graph.node(0);
  *op_name = node.op_type();
  for (const auto& v : graph.input()) {
    if (!v.type().has_tensor_type()) {
      *skip = "input " + v.name() + " is not a tensor (a sequence or optional value)";
      return "";
    }
  }
  const fs::path data = dir / "test_data_set_0";
  // Inputs are numbered over the graph's inputs; an empty name is an omitted optional one.
  auto inputs = ReadTensors(data, "input_", graph.input_size());
  if (!inputs.ok()) {
    *skip = inputs.status().message();
    return "";
  }
  auto expected = ReadTensors(data, "output_", graph.output_size());
  if (!expected.ok()) {
    *skip = expected.status().message();
    return "";
  }
  NodeCase c;
  *skip = onnx_cases::MapOnnxNode(node, *inputs, &c);
  if (!skip->empty()) return "";
  Graph g;
  std::vector<ValueId> ids;
  for (int i : c.inputs) {
    const Tensor& t = (*inputs)[i];
    ids.push_back(g.AddInput("in" + std::to_string(i), t.shape(), t.dtype()));
  }
  Result<NodeId> id = Status::Internal("no node");
  if (c.batch_statistics) {
    auto y = AddBatchNormTraining(g, node.op_type(), ids[0], ids[1], ids[2], c.attrs.epsilon);
    id = y.ok() ? Result<NodeId>(g.value(*y).producer) : Result<NodeId>(y.status());
  } else {
    id = g.AddNode(c.op, node.op_type(), ids, c.attrs);
  }
  if (!id.ok()) {
    *skip = "Shardscope refuses it: " + id.status().message();
    return "";
  }
  Executor ex(g);
  for (size_t k = 0; k < ids.size(); ++k) ex.value(ids[k]) = (*inputs)[c.inputs[k]];
  const std::vector<ValueId>& outs = g.node(*id).outputs;
  ex.Run(ex.Schedule(outs), 0, /*training=*/false);
  std::ostringstream err;
  for (int k = 0; k < c.outputs; ++k) {
    const Tensor &got = ex.value(outs[k]), &want = (*expected)[k];
    if (got.shape() != want.shape()) {
      err << "output " << k << " has shape " << ShapeToString(got.shape()) << ", ONNX "
          << ShapeToString(want.shape());
      return err.str();
    }
    for (int64_t i = 0; i < got.size(); ++i) {
      const double a = got.dtype() == DType::kI32 ? got.ints()[i] : got[i];
      const double b = want.dtype() == DType::kI32 ? want.ints()[i] : want[i];
      if (std::isnan(a) && std::isnan(b)) continue;
      if (!(std::abs(a - b) <= 1e-6 + 1e-4 * std::abs(b))) {
        err << "output " << k << "[" << i << "] = " << a << ", ONNX " << b;
        return err.str();
      }
    }
  }
  return "";
}

TEST(OnnxNodeTests, SupportedOperatorsMatchOnnxReferenceOutputs) {
  ASSERT_TRUE(fs::is_directory(kNodeTests))
      << kNodeTests << " is missing: install libonnx-testdata (scripts/deps.sh)";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNodeTests)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, int> covered_per_op;
  int covered = 0, skipped = 0;
  for (const fs::path& dir : dirs) {
    std::string skip, op;
    const std::string failure = RunNodeTest(dir, &skip, &op);
    const std::string name = dir.filename().string();
    const auto& mapped = onnx_cases::MappedOnnxOps();
    const bool ours = std::find(mapped.begin(), mapped.end(), op) != mapped.end();
    if (!ours) continue;  // operators Shardscope does not have: not listed one by one
    if (!skip.empty()) {
      std::printf("[ SKIPPED  ] %s (%s): %s\n", name.c_str(), op.c_str(), skip.c_str());
      ++skipped;
      continue;
    }
    EXPECT_EQ(failure, "") << name;
    std::printf("[ COVERED  ] %s (%s)%s\n", name.c_str(), op.c_str(),
                failure.empty() ? "" : " MISMATCH");
    ++covered;
    ++covered_per_op[op];
  }
  std::printf("[   INFO   ] %d node tests covered, %d skipped\n", covered, skipped);
  // Every mapped operator has a covering node test but two: ONNX 1.12 tests no f32 <-> int
  // Cast, and its Gather tests take tables of rank ≠ 2 or axis 1 (unit tests cover both).
  for (const std::string& op : onnx_cases::MappedOnnxOps()) {
    if (op != "Cast" && op != "Gather") {
      EXPECT_GE(covered_per_op[op], 1) << op << " has no covering node test";
    }
  }
}

}  // namespace
}  // namespace shardscope

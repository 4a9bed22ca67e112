#include "cli/mesh_options.h"

#include "cli/limits.h"
#include "shardscope/checked_math.h"

namespace shardscope::cli {

void MeshOptions::Add(CLI::App* app, bool required) {
  app->add_option("--mesh", mesh, "Mesh shape, e.g. 2,2,2")->delimiter(',')->required(required);
  app->add_option("--axes", axes, "Axis names, e.g. dp,sp,mp (default a0,a1,...)")->delimiter(',');
  app->add_option("--ranks", ranks, "Explicit rank list, a permutation (default row-major)")
      ->delimiter(',');
  app->add_option("--shape", shape, "Tensor shape, e.g. 2,4")->delimiter(',')->required(required);
}

Result<DeviceMesh> MeshOptions::MakeMesh() const {
  std::vector<std::string> names = axes;
  if (names.empty()) {
    for (size_t i = 0; i < mesh.size(); ++i) names.push_back("a" + std::to_string(i));
  }
  if (names.size() != mesh.size()) {
    return Status::Invalid("--axes names " + std::to_string(names.size()) +
                           " axes but --mesh has " + std::to_string(mesh.size()));
  }
  auto m = DeviceMesh::Create(Shape(mesh.begin(), mesh.end()), names, ranks);
  if (!m.ok()) return m.status().WithContext("--mesh");
  const int64_t limit = GetLimits().mesh_ranks;
  if (m->size() > limit) {
    return Status::Invalid("--mesh " + m->ToString() + " has " + std::to_string(m->size()) +
                           " ranks; `layout` and `redistribute` handle every rank, at most " +
                           std::to_string(limit) + " (--resource-limit mesh_ranks=N)");
  }
  return m;
}

Result<Shape> MeshOptions::TensorShape(int64_t element_bytes) const {
  Shape s(shape.begin(), shape.end());
  SHARDSCOPE_RETURN_IF_ERROR(CheckTensorSize(s, element_bytes, "--shape"));
  return s;
}

Result<Layout> ParseLayoutOption(const std::string& option, const std::string& text,
                                 const DeviceMesh& mesh, const Shape& shape) {
  auto l = ParseLayoutSpec(text, mesh, shape);
  if (!l.ok()) return l.status().WithContext(option);
  return l;
}

}  // namespace shardscope::cli

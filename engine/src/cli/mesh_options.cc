#include "cli/mesh_options.h"

namespace shardscope::cli {

void MeshOptions::Add(CLI::App* app) {
  app->add_option("--mesh", mesh, "Mesh shape, e.g. 2,2,2")->delimiter(',')->required();
  app->add_option("--axes", axes, "Axis names, e.g. dp,sp,mp (default a0,a1,...)")->delimiter(',');
  app->add_option("--ranks", ranks, "Explicit rank list, a permutation (default row-major)")
      ->delimiter(',');
  app->add_option("--shape", shape, "Tensor shape, e.g. 2,4")->delimiter(',')->required();
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
  return m;
}

Result<Layout> ParseLayoutOption(const std::string& option, const std::string& text,
                                 const DeviceMesh& mesh, const Shape& shape) {
  auto l = ParseLayoutSpec(text, mesh, shape);
  if (!l.ok()) return l.status().WithContext(option);
  return l;
}

}  // namespace shardscope::cli

// Internal: the --mesh/--axes/--ranks/--shape options shared by `layout` and `redistribute`.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"

namespace shardscope::cli {

struct MeshOptions {
  std::vector<int64_t> mesh;
  std::vector<std::string> axes;
  std::vector<int> ranks;
  std::vector<int64_t> shape;

  // `required`: --mesh and --shape must be given (else the command checks them itself).
  void Add(CLI::App* app, bool required = true);
  // The mesh, with default axis names a0, a1, ... when --axes is omitted; at most
  // mesh_ranks ranks (limits.h).
  Result<DeviceMesh> MakeMesh() const;
  // --shape, refused when its elements x `element_bytes` do not fit (CheckTensorSize).
  Result<Shape> TensorShape(int64_t element_bytes) const;
};

// A layout from the one-line form ("mp,(sp,dp)|P(dp)"), naming the option on error.
Result<Layout> ParseLayoutOption(const std::string& option, const std::string& text,
                                 const DeviceMesh& mesh, const Shape& shape);

}  // namespace shardscope::cli

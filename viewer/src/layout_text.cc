#include "shardscope/viewer/layout_text.h"

#include <algorithm>

namespace shardscope::viewer {

namespace {
// Meshes beyond plan's --devices limit are refused: their rank tables alone would take
// gigabytes for a damaged file's 2^30 devices.
constexpr int64_t kMaxDevices = int64_t{1} << 20;
}  // namespace

Result<DeviceMesh> MeshFromRecord(const store::MeshRecord& mesh) {
  int64_t devices = 1;
  for (int64_t d : mesh.shape) {
    if (d < 1 || devices > kMaxDevices / d) {
      return Status::Invalid("mesh " + std::to_string(mesh.id) + ": shape has an axis of size " +
                             std::to_string(d) + " or more than " + std::to_string(kMaxDevices) +
                             " devices in all");
    }
    devices *= d;
  }
  const int64_t offset = MeshRankOffset(mesh);
  std::vector<int> ranks;
  for (int64_t r : mesh.ranks) ranks.push_back(static_cast<int>(r - offset));
  auto result =
      DeviceMesh::Create(Shape(mesh.shape.begin(), mesh.shape.end()), mesh.axis_names, ranks);
  if (!result.ok()) {
    return result.status().WithContext("mesh " + std::to_string(mesh.id) + " '" + mesh.name + "'");
  }
  return result;
}

int64_t MeshRankOffset(const store::MeshRecord& mesh) {
  if (mesh.ranks.empty()) return 0;
  const auto [low, high] = std::minmax_element(mesh.ranks.begin(), mesh.ranks.end());
  const auto n = static_cast<int64_t>(mesh.ranks.size());
  if (*low <= 0 || *high - *low != n - 1) return 0;  // not a block of consecutive ranks
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t r : mesh.ranks) {
    if (seen[static_cast<size_t>(r - *low)]) return 0;  // a repeat: Create names it
    seen[static_cast<size_t>(r - *low)] = true;
  }
  return *low;
}

Result<Layout> ParseStoredLayout(const std::string& text, const DeviceMesh& mesh,
                                 const std::vector<int64_t>& shape) {
  // "[a | b.c | -] P(x,y)" -> "a,b.c,-|P(x,y)"
  std::string body = text;
  std::string partial;
  const size_t p = body.find("P(");
  if (p != std::string::npos) {
    partial = "|" + body.substr(p);
    body = body.substr(0, p);
  }
  const size_t open = body.find('[');
  const size_t close = body.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return Status::Invalid("layout '" + text + "': expected '[dims...]' as the engine prints it");
  }
  std::string spec;
  for (char c : body.substr(open + 1, close - open - 1)) {
    if (c == '|') {
      spec += ',';
    } else if (c != ' ') {
      spec += c;
    }
  }
  auto layout = ParseLayoutSpec(spec + partial, mesh, Shape(shape.begin(), shape.end()));
  if (!layout.ok()) return layout.status().WithContext("layout '" + text + "'");
  return layout;
}

}  // namespace shardscope::viewer

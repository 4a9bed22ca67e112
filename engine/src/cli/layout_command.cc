// `shardscope layout`: which ranks hold which block of a tensor.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/mesh_options.h"
#include "shardscope/store/reader.h"
#include "shardscope/viewer/layout_text.h"

namespace shardscope::cli {
namespace {

struct LayoutOptions {
  MeshOptions mesh;
  std::string layout;
  bool json = false;
  std::string run, tensor;  // --run RUN --tensor NAME: the tensor's layout at its producer
};

std::string JoinInts(const std::vector<int>& v, const char* sep = ",") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

// Per block (row-major over BlocksPerDim), the ranks holding it.
std::vector<std::vector<int>> OwnersByBlock(const Layout& l) { return l.BlockOwners(); }

// Prints the block grid: the last two dimensions as rows × columns, the leading ones as
// separate slices (one grid per combination of their block indices).
void PrintGrid(const Layout& l, std::ostringstream& out) {
  const std::vector<int64_t> blocks = l.BlocksPerDim();
  const Shape shard = l.ShardShape();
  const int rank = l.rank();
  const auto owners = OwnersByBlock(l);
  const int64_t rows = rank >= 2 ? blocks[rank - 2] : 1;
  const int64_t cols = rank >= 1 ? blocks[rank - 1] : 1;
  const int64_t slices = owners.size() / (rows * cols);
  size_t width = 4;
  for (const auto& o : owners) width = std::max(width, JoinInts(o).size() + 2);
  if (rank >= 1) {
    const std::string widest = "[" + std::to_string((cols - 1) * shard[rank - 1]) + ":" +
                               std::to_string(cols * shard[rank - 1]) + ")";
    width = std::max(width, widest.size() + 2);
  }
  for (int64_t s = 0; s < slices; ++s) {
    if (rank > 2) {
      // Block index of the leading dimensions for this slice.
      std::vector<int64_t> lead(rank - 2);
      int64_t rem = s;
      for (int d = rank - 3; d >= 0; --d) {
        lead[d] = rem % blocks[d];
        rem /= blocks[d];
      }
      out << "slice";
      for (int d = 0; d < rank - 2; ++d) {
        out << " dim" << d << "[" << lead[d] * shard[d] << ":" << (lead[d] + 1) * shard[d] << ")";
      }
      out << "\n";
    }
    out << "          ";
    for (int64_t c = 0; c < cols; ++c) {
      std::string h = rank >= 1 ? "[" + std::to_string(c * shard[rank - 1]) + ":" +
                                      std::to_string((c + 1) * shard[rank - 1]) + ")"
                                : "";
      out << h << std::string(width > h.size() ? width - h.size() : 1, ' ');
    }
    out << "\n";
    for (int64_t r = 0; r < rows; ++r) {
      std::string h = rank >= 2 ? "[" + std::to_string(r * shard[rank - 2]) + ":" +
                                      std::to_string((r + 1) * shard[rank - 2]) + ")"
                                : "";
      out << h << std::string(h.size() < 10 ? 10 - h.size() : 1, ' ');
      for (int64_t c = 0; c < cols; ++c) {
        const std::string cell = JoinInts(owners[(s * rows + r) * cols + c]);
        out << cell << std::string(width > cell.size() ? width - cell.size() : 1, ' ');
      }
      out << "\n";
    }
  }
}

int PrintLayout(const Result<DeviceMesh>& mesh, const Shape& shape, const Layout& l, bool json);

// A recorded tensor's layout at its producer, as the run file holds it.
int RunLayoutOfTensor(const LayoutOptions& o) {
  auto reader = store::RunReader::Open(o.run);
  if (!reader.ok()) return FailStore(reader.status());
  auto tensors = (*reader)->Tensors();
  if (!tensors.ok()) return FailStore(tensors.status());
  auto meshes = (*reader)->Meshes();
  if (!meshes.ok()) return FailStore(meshes.status());
  for (const store::TensorRecord& t : *tensors) {
    if (t.name != o.tensor) continue;
    for (const store::MeshRecord& m : *meshes) {
      if (m.id != t.mesh_id) continue;
      auto mesh = viewer::MeshFromRecord(m);
      if (!mesh.ok()) return Fail(kExitBadInput, o.run + ": " + mesh.status().message());
      auto layout = viewer::ParseStoredLayout(t.layout, *mesh, t.shape);
      if (!layout.ok()) return Fail(kExitBadInput, o.run + ": " + layout.status().message());
      if (const int64_t first = viewer::MeshRankOffset(m); first > 0 && !o.json)
        std::printf(
            "%s: a pipeline stage's mesh; its ranks 0-%d below are ranks %lld-%lld of "
            "the run\n",
            m.name.c_str(), mesh->size() - 1, static_cast<long long>(first),
            static_cast<long long>(first + mesh->size() - 1));
      return PrintLayout(mesh, Shape(t.shape.begin(), t.shape.end()), *layout, o.json);
    }
    return Fail(kExitBadInput, o.run + ": tensor '" + o.tensor + "' has no recorded layout");
  }
  return Fail(kExitBadInput, o.run + ": no tensor named '" + o.tensor + "' (`shardscope inspect " +
                                 o.run + " --json` lists them)");
}

int RunLayout(const LayoutOptions& o) {
  if (!o.run.empty() || !o.tensor.empty()) {
    if (o.run.empty() || o.tensor.empty())
      return Fail(kExitBadInput, "--run and --tensor go together (a tensor of a run file)");
    return RunLayoutOfTensor(o);
  }
  if (o.layout.empty() || o.mesh.mesh.empty() || o.mesh.shape.empty())
    return Fail(kExitBadInput, "--mesh, --shape and --layout are required (or --run and --tensor)");
  auto mesh = o.mesh.MakeMesh();
  if (!mesh.ok()) return Fail(kExitBadInput, mesh.status().message());
  auto tensor = o.mesh.TensorShape(4);
  if (!tensor.ok()) return Fail(kExitBadInput, tensor.status().message());
  const Shape& shape = *tensor;
  auto layout = ParseLayoutOption("--layout", o.layout, *mesh, shape);
  if (!layout.ok()) return Fail(kExitBadInput, layout.status().message());
  return PrintLayout(mesh, shape, *layout, o.json);
}

int PrintLayout(const Result<DeviceMesh>& mesh, const Shape& shape, const Layout& l, bool json) {
  if (json) {
    nlohmann::json j;
    j["mesh"] = {{"shape", mesh->shape()}, {"axes", mesh->names()}, {"ranks", mesh->rank_list()}};
    j["tensor_shape"] = shape;
    j["layout"] = l.ToString();
    j["spec"] = l.ToSpec();
    j["shard_shape"] = l.ShardShape();
    j["replication"] = l.ReplicationFactor();
    j["partial_axes"] = nlohmann::json::array();
    for (int a : l.partial_axes()) j["partial_axes"].push_back(mesh->axis_name(a));
    for (int r = 0; r < mesh->size(); ++r) {
      j["ranks"].push_back(
          {{"rank", r}, {"block", l.BlockIndex(r)}, {"offsets", l.ShardOffsets(r)}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::ostringstream out;
  out << mesh->ToString() << ", tensor " << ShapeToString(shape) << ", layout " << l.ToString()
      << "\n";
  out << "shard " << ShapeToString(l.ShardShape()) << " on each of " << mesh->size()
      << " ranks; each block held by " << l.ReplicationFactor() * l.PartialFactor() << " rank(s)";
  if (l.is_partial()) {
    out << "; partial sums over";
    for (int a : l.partial_axes()) out << " " << mesh->axis_name(a);
    out << " (the ranks in a cell hold addends that sum to the block)";
  }
  out << "\n\nranks holding each block (rows: dim " << (l.rank() >= 2 ? l.rank() - 2 : 0)
      << ", columns: dim " << (l.rank() >= 1 ? l.rank() - 1 : 0) << "; element ranges):\n";
  PrintGrid(l, out);
  out << "\nper rank: block index and offsets\n";
  for (int r = 0; r < mesh->size(); ++r) {
    const auto b = l.BlockIndex(r);
    const auto off = l.ShardOffsets(r);
    out << "  rank " << r << ": block (";
    for (size_t i = 0; i < b.size(); ++i) out << (i ? "," : "") << b[i];
    out << ") at (";
    for (size_t i = 0; i < off.size(); ++i) out << (i ? "," : "") << off[i];
    out << ")\n";
  }
  std::fputs(out.str().c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddLayoutCommand(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<LayoutOptions>();
  CLI::App* app = root.add_subcommand(
      "layout",
      "Show which ranks hold which block of a tensor under a layout.\n"
      "\n"
      "Example (seed 004): shardscope layout --mesh 2,2,2 --axes dp,sp,mp --shape 2,4 "
      "--layout \"mp,(sp,dp)\"\n"
      "Layout: one entry per tensor dimension, comma-separated: an axis name, several axes\n"
      "in parentheses (first = most significant), or - for not split; then |P(axis,...)\n"
      "for partial sums. Tensors of any rank print as 2-D grids, one per leading block.\n"
      "Meshes of more than mesh_ranks ranks are refused (--resource-limit mesh_ranks=N).\n"
      "A recorded tensor instead: shardscope layout --run runs/ffn.db --tensor dense1.weight\n"
      "(its layout at its producer: which ranks hold block (i,j)).");
  o->mesh.Add(app, /*required=*/false);
  app->add_option("--layout", o->layout, "Layout, e.g. \"mp,(sp,dp)\" or \"dp,-|P(mp)\"");
  app->add_option("--run", o->run, "A run file: show one of its tensors (with --tensor)");
  app->add_option("--tensor", o->tensor, "The tensor of --run, by name (dense1.weight)");
  app->add_flag("--json", o->json, "Print JSON instead of text");
  commands.push_back({app, [o] { return RunLayout(*o); }});
}

}  // namespace shardscope::cli

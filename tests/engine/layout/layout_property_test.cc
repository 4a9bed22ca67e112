// Property tests over random meshes (up to 4 axes, 16 devices, with and without explicit
// rank lists) and random layouts of tensors up to 4-D.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"

namespace shardscope {
namespace {

constexpr int kCases = 600;

DeviceMesh RandomMesh(std::mt19937& rng, bool explicit_ranks) {
  std::vector<std::string> pool = {"dp", "sp", "mp", "pp", "ep", "tp", "x0", "row", "col"};
  std::shuffle(pool.begin(), pool.end(), rng);
  const int num_axes = std::uniform_int_distribution<int>(0, 4)(rng);
  Shape shape;
  std::vector<std::string> names;
  int64_t total = 1;
  for (int a = 0; a < num_axes; ++a) {
    std::vector<int64_t> options;
    for (int64_t s = 1; s <= 4; ++s) {
      if (total * s <= 16) options.push_back(s);
    }
    const int64_t s = options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
    shape.push_back(s);
    names.push_back(pool[a]);
    total *= s;
  }
  std::vector<int> ranks;
  if (explicit_ranks) {
    ranks.resize(total);
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng);
  }
  Result<DeviceMesh> mesh = DeviceMesh::Create(shape, names, ranks);
  EXPECT_TRUE(mesh.ok()) << mesh.status().message();
  return *mesh;
}

// Each mesh axis goes to a random dimension (in random order), to the partial set, or
// stays a replica axis. Dimension sizes are multiples (x1..x3) of their split factor.
Layout RandomLayout(std::mt19937& rng, const DeviceMesh& mesh) {
  const int rank = std::uniform_int_distribution<int>(0, 4)(rng);
  DimAxes dims(rank);
  std::vector<int> partial;
  std::vector<int> axes(mesh.num_axes());
  std::iota(axes.begin(), axes.end(), 0);
  std::shuffle(axes.begin(), axes.end(), rng);
  for (int a : axes) {
    const int choice = std::uniform_int_distribution<int>(-2, rank - 1)(rng);
    if (choice >= 0) {
      dims[choice].push_back(a);
    } else if (choice == -1 && std::bernoulli_distribution(0.5)(rng)) {
      partial.push_back(a);
    }
  }
  Shape shape(rank);
  for (int d = 0; d < rank; ++d) {
    shape[d] = mesh.GroupSize(dims[d]) * std::uniform_int_distribution<int64_t>(1, 3)(rng);
  }
  Result<Layout> layout = Layout::Create(mesh, dims, partial, shape);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  return layout.ok() ? *layout : Layout();
}

std::string Quoted(const std::string& name, int style) {
  return style % 2 ? "'" + name + "'" : "\"" + name + "\"";
}

// The seeds' notation for a mesh and a layout call.
std::string MeshExpr(const DeviceMesh& mesh, int style) {
  std::string shape, names, ranks;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    shape += std::to_string(mesh.axis_size(a)) + ", ";
    names += Quoted(mesh.axis_name(a), style + a) + ", ";
  }
  std::string out = "Layout((" + shape + "), (" + names + ")";
  if (mesh.has_explicit_ranks()) {
    for (int r : mesh.rank_list()) ranks += std::to_string(r) + ",";
    out += ", rank_list=[" + ranks + "]";
  }
  return out + ")";
}

std::string LayoutCall(const Layout& layout, int style) {
  std::string out = "layout(";
  for (int d = 0; d < layout.rank(); ++d) {
    if (d) out += ", ";
    const std::vector<int>& axes = layout.dim_axes(d);
    if (axes.empty()) {
      out += Quoted("None", style + d);
    } else if (axes.size() == 1 && (style + d) % 3 != 0) {
      out += Quoted(layout.mesh().axis_name(axes[0]), style + d);
    } else {
      out += "(";
      for (int a : axes) out += Quoted(layout.mesh().axis_name(a), style + a) + ",";
      out += ")";
    }
  }
  return out + ")";
}

TEST(LayoutPropertyTest, SpecRoundTrip) {
  std::mt19937 rng(20240611);
  for (int i = 0; i < kCases; ++i) {
    const DeviceMesh mesh = RandomMesh(rng, i % 2 == 1);
    const Layout layout = RandomLayout(rng, mesh);
    const std::string spec = layout.ToSpec();
    Result<Layout> parsed = ParseLayoutSpec(spec, mesh, layout.shape());
    ASSERT_TRUE(parsed.ok()) << layout.DebugString() << " spec '" << spec
                             << "': " << parsed.status().message();
    EXPECT_EQ(*parsed, layout) << layout.DebugString() << " spec '" << spec << "'";
    EXPECT_EQ(parsed->Hash(), layout.Hash());
    EXPECT_EQ(parsed->ToString(), layout.ToString());
  }
}

TEST(LayoutPropertyTest, SeedNotationRoundTrip) {
  std::mt19937 rng(7);
  for (int i = 0; i < kCases; ++i) {
    const DeviceMesh mesh = RandomMesh(rng, i % 2 == 0);
    const std::string expr = MeshExpr(mesh, i);
    Result<DeviceMesh> parsed_mesh = ParseMeshExpr(expr);
    ASSERT_TRUE(parsed_mesh.ok()) << expr << ": " << parsed_mesh.status().message();
    EXPECT_EQ(*parsed_mesh, mesh) << expr;
    Result<DeviceMesh> from_string = ParseMeshSpec(mesh.ToString());
    ASSERT_TRUE(from_string.ok()) << mesh.ToString() << ": " << from_string.status().message();
    EXPECT_EQ(*from_string, mesh);

    const Layout layout = RandomLayout(rng, mesh);
    const std::string call = LayoutCall(layout, i);
    Result<DimAxes> dims = ParseLayoutCall(call, *parsed_mesh);
    ASSERT_TRUE(dims.ok()) << call << ": " << dims.status().message();
    EXPECT_EQ(*dims, layout.dims_axes()) << call;
  }
}

// Every element of the tensor is held by exactly mesh.size() / NumBlocks() ranks
// (= ReplicationFactor() x PartialFactor()), shards are boxes of ShardShape() at
// ShardOffsets(), and the per-rank queries agree with each other.
TEST(LayoutPropertyTest, ShardsCoverEveryElementReplicationTimes) {
  std::mt19937 rng(12345);
  for (int i = 0; i < kCases; ++i) {
    const DeviceMesh mesh = RandomMesh(rng, i % 2 == 1);
    const Layout layout = RandomLayout(rng, mesh);
    SCOPED_TRACE(layout.DebugString());
    const Shape& shape = layout.shape();
    const Shape shard = layout.ShardShape();
    const int64_t copies = layout.ReplicationFactor() * layout.PartialFactor();
    ASSERT_EQ(copies * layout.NumBlocks(), mesh.size());

    std::vector<int> count(NumElements(shape), 0);
    for (int r = 0; r < mesh.size(); ++r) {
      const std::vector<int64_t> offsets = layout.ShardOffsets(r);
      ASSERT_EQ(offsets.size(), shape.size());
      for (size_t d = 0; d < shape.size(); ++d) {
        ASSERT_GE(offsets[d], 0);
        ASSERT_LE(offsets[d] + shard[d], shape[d]);
      }
      // Walk the shard's elements row-major.
      const int64_t n = NumElements(shard);
      for (int64_t e = 0; e < n; ++e) {
        int64_t rest = e, flat = 0, stride = 1;
        for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
          const int64_t local = rest % shard[d];
          rest /= shard[d];
          flat += (offsets[d] + local) * stride;
          stride *= shape[d];
        }
        ++count[flat];
      }
    }
    for (size_t e = 0; e < count.size(); ++e) {
      ASSERT_EQ(count[e], copies) << "element " << e;
    }

    // Replica and partial groups: same block, right sizes, and the owners of each block are
    // exactly the product of the two.
    const std::vector<std::vector<int>> owners = layout.BlockOwners();
    const std::vector<std::vector<int64_t>> blocks = layout.RankBlocks();
    ASSERT_EQ(static_cast<int64_t>(owners.size()), layout.NumBlocks());
    for (int r = 0; r < mesh.size(); ++r) {
      const std::vector<int> replicas = layout.ReplicaGroup(r);
      const std::vector<int> partials = layout.PartialGroup(r);
      EXPECT_EQ(static_cast<int64_t>(replicas.size()), layout.ReplicationFactor());
      EXPECT_EQ(static_cast<int64_t>(partials.size()), layout.PartialFactor());
      EXPECT_NE(std::find(replicas.begin(), replicas.end(), r), replicas.end());
      for (int q : replicas) EXPECT_EQ(blocks[q], blocks[r]);
      for (int q : partials) EXPECT_EQ(blocks[q], blocks[r]);
      const std::vector<int>& holders = owners[layout.LinearBlockIndex(r)];
      EXPECT_EQ(static_cast<int64_t>(holders.size()), copies);
      EXPECT_TRUE(std::is_sorted(holders.begin(), holders.end()));
      EXPECT_EQ(layout.BlockIndex(r), blocks[r]);
    }
  }
}

// Two random layouts on the same mesh and shape are equal exactly when their specs are.
TEST(LayoutPropertyTest, EqualityMatchesSpec) {
  std::mt19937 rng(99);
  int equal_pairs = 0;
  for (int i = 0; i < kCases; ++i) {
    const DeviceMesh mesh = RandomMesh(rng, false);
    const Layout a = RandomLayout(rng, mesh);
    // An independent draw; compared only when the shapes agree.
    const Layout b = RandomLayout(rng, mesh);
    if (a.shape() != b.shape()) continue;
    const bool same_spec = a.ToSpec() == b.ToSpec();
    EXPECT_EQ(a == b, same_spec) << a.DebugString() << " vs " << b.DebugString();
    if (same_spec) {
      ++equal_pairs;
      EXPECT_EQ(a.Hash(), b.Hash());
    }
  }
  EXPECT_GT(equal_pairs, 0);
}

}  // namespace
}  // namespace shardscope

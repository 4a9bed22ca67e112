// GradientReduceScatters: a partial gradient is reduce-scattered straight into its parameter's
// optimizer slices only when every rank holds the same block and sums with its replicas.
#include <gtest/gtest.h>

#include "partition/partition_passes.h"

namespace shardscope {
namespace {

// The definition, rank by rank (quadratic in ranks): what the linear check must agree with.
bool PerRank(const Layout& grad, const Layout& param) {
  if (grad.mesh().size() != param.mesh().size() || grad.dims_axes() != param.dims_axes() ||
      !grad.is_partial() || grad.partial_axes() != param.replica_axes())
    return false;
  for (int r = 0; r < param.mesh().size(); ++r) {
    if (grad.ShardOffsets(r) != param.ShardOffsets(r) ||
        grad.PartialGroup(r) != param.ReplicaGroup(r))
      return false;
  }
  return true;
}

DeviceMesh Mesh(Shape shape, std::vector<int> ranks = {}) {
  return *DeviceMesh::Create(std::move(shape), {"a", "b"}, std::move(ranks));
}

TEST(GradientReduceScatters, AgreesWithTheRankByRankDefinition) {
  const Shape shape = {8, 3};
  const DimAxes rows_over_b = {{1}, {}};
  const Layout grad = *Layout::Create(Mesh({2, 4}), rows_over_b, {0}, shape);
  // The same mesh: every rank's summing group is its replica group.
  const Layout same = *Layout::Create(Mesh({2, 4}), rows_over_b, {}, shape);
  EXPECT_TRUE(GradientReduceScatters(grad, same));
  EXPECT_TRUE(PerRank(grad, same));
  // Ranks 0 and 4 swapped: the same blocks, but their groups list them in another order.
  const Layout swapped =
      *Layout::Create(Mesh({2, 4}, {4, 1, 2, 3, 0, 5, 6, 7}), rows_over_b, {}, shape);
  EXPECT_FALSE(GradientReduceScatters(grad, swapped));
  EXPECT_FALSE(PerRank(grad, swapped));
  // Other meshes of the same size and rank orders: both checks agree on each.
  const std::vector<DeviceMesh> meshes = {Mesh({2, 4}, {1, 0, 3, 2, 5, 4, 7, 6}),
                                          Mesh({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}), Mesh({4, 2}),
                                          Mesh({2, 4}, {4, 5, 6, 7, 0, 1, 2, 3})};
  for (const DeviceMesh& m : meshes) {
    for (const DeviceMesh& n : meshes) {
      const Layout g = *Layout::Create(m, rows_over_b, {0}, shape);
      const Layout p = *Layout::Create(n, rows_over_b, {}, shape);
      EXPECT_EQ(GradientReduceScatters(g, p), PerRank(g, p)) << m.ToString() << " " << n.ToString();
    }
  }
}

}  // namespace
}  // namespace shardscope

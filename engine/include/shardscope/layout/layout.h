// Module layout (engine/src/layout, library shardscope_layout): device meshes (mesh.h),
// tensor layouts on them and their notations (this header; parsing in parse.cc). Pure math,
// no communication: the viewer links it too.
//
// Layout: how one tensor is distributed over a DeviceMesh (MindSpore: tensor layout;
// PyTorch: DTensor placements; JAX: NamedSharding).
//
// For every tensor dimension, an ordered list of mesh axes it is split over: empty means not
// split; several means split over the product of their sizes, the first listed axis the most
// significant. Plus the set of mesh axes over which the tensor is a partial sum that still
// has to be reduced. Mesh axes used neither by a dimension nor as partial hold replicas.
//
// Example (seeds/004): mesh (2,2,2) named (dp,sp,mp), tensor 2x4, layout("mp", ("sp","dp")):
// dimension 0 is split over mp, dimension 1 over sp (major) then dp (minor), so row 0,
// columns 0,1,2,3 live on ranks 0,4,2,6. Printed "[mp | sp.dp]", spec "mp,(sp,dp)".
//
// Splits are even: every split dimension must be divisible by the product of its axes'
// sizes, so all shards have the same shape. A Layout carries its mesh and the global tensor
// shape; Create() validates, so every Layout object is valid. It is an immutable value:
// copyable, comparable (mesh, shape, per-dimension axes and partial axes must all match),
// hashable. Copies share one representation: a copy costs a reference count.
//
// Vocabulary of the per-rank queries: the tensor is cut into a grid of blocks (NumBlocks()
// of them, BlocksPerDim()[d] along dimension d); a rank holds one block, identified by its
// per-dimension block index. Ranks differing only along replica axes hold identical data
// (ReplicaGroup); ranks differing only along partial axes hold the same index range but
// different addends of the sum (PartialGroup).
//
// Rank arguments must be in [0, mesh().size()) (asserted). Thread safety: const methods may
// be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/layout/mesh.h"
#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

// Per tensor dimension, the mesh axis indices it is split over (first = most significant).
using DimAxes = std::vector<std::vector<int>>;

class Layout {
 public:
  // A scalar (rank-0 tensor) on the one-device mesh.
  Layout() = default;

  // Checks that `dims_axes`/`partial_axes` describe a valid layout of a tensor of shape
  // `shape` on `mesh`. Errors (kInvalidInput), each naming what is wrong:
  //   - dims_axes.size() != shape.size();  a negative dimension size;
  //   - an axis index outside the mesh;
  //   - an axis used twice (within one dimension, by two dimensions, or twice as partial);
  //   - a partial axis also used by a dimension;
  //   - a dimension whose size is not divisible by the product of its axes' sizes (the
  //     message gives the dimension, its size, the axes and the product).
  static Status Validate(const DeviceMesh& mesh, const DimAxes& dims_axes,
                         const std::vector<int>& partial_axes, const Shape& shape);
  // Validate() then build. `partial_axes` may be in any order; it is stored sorted.
  static Result<Layout> Create(DeviceMesh mesh, DimAxes dims_axes, std::vector<int> partial_axes,
                               Shape shape);
  // Create() with axes given by name; an unknown name is an error naming the mesh's axes.
  static Result<Layout> CreateByName(DeviceMesh mesh,
                                     const std::vector<std::vector<std::string>>& dims_axes,
                                     const std::vector<std::string>& partial_axes, Shape shape);
  // Fully replicated (no split, no partial) layout; cannot fail.
  static Layout Replicated(DeviceMesh mesh, Shape shape);

  const DeviceMesh& mesh() const { return rep().mesh; }
  // Global (unsharded) tensor shape.
  const Shape& shape() const { return rep().shape; }
  int rank() const { return static_cast<int>(rep().shape.size()); }
  const DimAxes& dims_axes() const { return rep().dims_axes; }
  const std::vector<int>& dim_axes(int dim) const { return rep().dims_axes[dim]; }
  // Sorted ascending.
  const std::vector<int>& partial_axes() const { return rep().partial_axes; }
  bool is_partial() const { return !rep().partial_axes.empty(); }
  // Mesh axes neither splitting a dimension nor partial, ascending.
  std::vector<int> replica_axes() const;
  // The dimension split over mesh axis `axis`, or -1 if none.
  int DimOfAxis(int axis) const;
  bool IsPartialOver(int axis) const;

  // Number of blocks along each dimension (product of its axes' sizes).
  std::vector<int64_t> BlocksPerDim() const;
  // Total number of distinct blocks (product of BlocksPerDim()).
  int64_t NumBlocks() const;
  // Number of ranks holding the same block: product of the replica axes' sizes.
  int64_t ReplicationFactor() const;
  // Number of addends of the partial sum: product of the partial axes' sizes (1 if none).
  int64_t PartialFactor() const;

  // Shape of every shard (the same on every rank since splits are even).
  Shape ShardShape() const;
  Shape ShardShape(int /*rank*/) const { return ShardShape(); }
  // Per dimension, the block index held by `rank`.
  std::vector<int64_t> BlockIndex(int rank) const;
  // BlockIndex(rank) as one row-major number over the block grid, in [0, NumBlocks()).
  int64_t LinearBlockIndex(int rank) const;
  // Per dimension, the global index of the first element of `rank`'s shard.
  std::vector<int64_t> ShardOffsets(int rank) const;
  // Ranks holding exactly the same data as `rank` (itself included); members ordered as in
  // DeviceMesh::GroupOf over replica_axes().
  std::vector<int> ReplicaGroup(int rank) const;
  // Ranks whose shards sum to the reduced block of `rank` (itself included); just {rank}
  // when not partial.
  std::vector<int> PartialGroup(int rank) const;

  // For every rank r (index r), BlockIndex(r). The tensor map of the whole layout.
  std::vector<std::vector<int64_t>> RankBlocks() const;
  // For every block (by LinearBlockIndex), the ranks holding it, ascending.
  std::vector<std::vector<int>> BlockOwners() const;

  // "[mp | sp.dp]": dimensions separated by " | ", a multi-axis dimension joined by '.', an
  // unsplit dimension "-", then " P(mp)" / " P(dp,mp)" when partial. "[]" for a scalar.
  std::string ToString() const;
  // The one-line command-line form, read back by ParseLayoutSpec(): "mp,(sp,dp)",
  // "(sp,dp),-|P(mp)"; "" for a non-partial scalar.
  std::string ToSpec() const;
  // ToString() plus mesh and shape: "[mp | sp.dp] on mesh(dp=2,sp=2,mp=2) shape [2, 4]".
  std::string DebugString() const;

  size_t Hash() const;
  friend bool operator==(const Layout& a, const Layout& b) {
    if (a.rep_ == b.rep_) return true;
    const Rep& x = a.rep();
    const Rep& y = b.rep();
    return x.shape == y.shape && x.dims_axes == y.dims_axes && x.partial_axes == y.partial_axes &&
           x.mesh == y.mesh;
  }

 private:
  // The immutable data, shared by all copies of a layout.
  struct Rep {
    DeviceMesh mesh;
    Shape shape;
    DimAxes dims_axes;
    std::vector<int> partial_axes;
  };
  static const Rep kScalar;
  // Null (default-constructed or moved-from layout) is the scalar on the one-device mesh.
  const Rep& rep() const { return rep_ ? *rep_ : kScalar; }

  std::shared_ptr<const Rep> rep_;
};

inline const Layout::Rep Layout::kScalar{};

std::ostream& operator<<(std::ostream& os, const Layout& layout);

// Parses one call of the seeds' (MindSpore) layout notation against `mesh`, e.g.
//   layout("mp", ("sp", "dp"))      ->  {{2}, {1, 0}}   on mesh (dp,sp,mp)
//   layout2('None', 'tp')           ->  {{}, {0}}
// The callee name is free (it is whatever the mesh was assigned to). Each argument is one
// tensor dimension: an axis name, "None" (or bare None, or ()) for not split, or a tuple of
// axis names. Strings use ' or "; whitespace is free; trailing commas are allowed. Errors
// give the 1-based column and what was expected: syntax, unknown axis (listing the mesh's
// axes), an axis used twice. Divisibility is not checked here (no shape); Layout::Create
// does that.
Result<DimAxes> ParseLayoutCall(std::string_view text, const DeviceMesh& mesh);

// Parses the one-line command-line form and builds the layout of a tensor of `shape`:
// dimensions separated by ',', each an axis name, "-" or "None" for not split, or a
// parenthesised list "(sp,dp)" (also accepted: "sp.dp") for several axes; then optionally
// "|P(mp)" or "|P(mp,dp)" for partial axes. Examples: "mp,(sp,dp)", "(sp,dp),-|P(mp)".
// An empty spec (or "|P(...)") is a scalar. Syntax errors give the column and what was
// expected; the remaining errors are those of Layout::Create(), prefixed with the spec.
Result<Layout> ParseLayoutSpec(std::string_view text, const DeviceMesh& mesh, const Shape& shape);

}  // namespace shardscope

template <>
struct std::hash<shardscope::Layout> {
  size_t operator()(const shardscope::Layout& layout) const { return layout.Hash(); }
};

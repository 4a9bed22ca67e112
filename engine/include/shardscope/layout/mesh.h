// DeviceMesh: the logical arrangement of the devices of a run (MindSpore: device matrix).
//
// A mesh is an N-D grid of devices with one name per axis, e.g. shape (2,2,2) named
// (dp,sp,mp). Each grid position holds one rank. By default ranks are laid out row-major,
// last axis fastest: on (2,2,2), rank = 4*dp + 2*sp + mp. An explicit rank list (a
// permutation of 0..size-1, in row-major grid order) places ranks anywhere instead, like
// the `mesh` tensor of a PyTorch DeviceMesh or MindSpore's `rank_list`.
//
// A DeviceMesh is an immutable value: cheap to copy (copies share one representation, so a
// copy costs a reference count, not the rank list), comparable, hashable. Meshes are built
// only through Create() (or the parsers below), which validates everything, so every
// DeviceMesh object is valid. A mesh with zero axes is the one-device mesh; it is also what
// the default constructor gives.
//
// Axis names are identifiers (letters, digits, '_', not starting with a digit), unique, and
// not "None" (which the layout notations use for "not split").
//
// Preconditions of the accessors (axis indices in range, coordinates inside the grid, ranks
// in [0, size())) are programming errors and are only asserted. Input that comes from a user
// goes through Create(), axis_index() or the parsers, which return a Status instead.
//
// Thread safety: const methods may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

class DeviceMesh {
 public:
  // The one-device mesh: no axes, size() == 1.
  DeviceMesh();

  // Validates and builds a mesh. `shape[i]` is the size of axis `names[i]`. `ranks`, when
  // not empty, lists the rank at each grid position in row-major order and must be a
  // permutation of 0..N-1 where N is the product of `shape`. A rank list equal to the default
  // order is dropped (the result equals, and prints like, the mesh built without it).
  // Errors (kInvalidInput): sizes < 1, name count != axis count, empty / non-identifier /
  // duplicated names, too many devices (more than INT32_MAX), rank list of the wrong length,
  // a rank out of range, duplicated or missing (the message names it).
  static Result<DeviceMesh> Create(Shape shape, std::vector<std::string> names,
                                   std::vector<int> ranks = {});

  int num_axes() const { return static_cast<int>(rep().shape.size()); }
  const Shape& shape() const { return rep().shape; }
  const std::vector<std::string>& names() const { return rep().names; }
  int64_t axis_size(int axis) const;
  const std::string& axis_name(int axis) const;
  // Number of devices (product of the axis sizes; 1 for the zero-axis mesh).
  int size() const { return rep().size; }

  // True when the mesh carries a rank list different from the default row-major order.
  bool has_explicit_ranks() const { return !rep().ranks.empty(); }
  // The rank at every grid position, row-major (the default order when not explicit).
  std::vector<int> rank_list() const;
  // The explicit rank order and its inverse (the grid position of each rank), without a
  // copy; both empty when the order is the default.
  const std::vector<int>& explicit_ranks() const { return rep().ranks; }
  const std::vector<int>& explicit_positions() const { return rep().position; }

  // The rank at grid coordinates `coords` (one per axis, 0 <= coords[i] < shape[i]).
  int rank_at(const std::vector<int64_t>& coords) const;
  // The grid coordinates of `rank` (0 <= rank < size()).
  std::vector<int64_t> coords_of(int rank) const;

  // Index of the axis called `name`; kNotFound naming the known axes otherwise.
  Result<int> axis_index(std::string_view name) const;
  // axis_index() for each name, in order; fails on the first unknown name.
  Result<std::vector<int>> axis_indices(const std::vector<std::string>& names) const;

  // Partition of all ranks into groups whose members differ only in the coordinates of
  // `axes` (distinct, valid axis indices; may be empty, then every rank is its own group).
  // Order (deterministic): inside a group, members are ordered by their coordinates along
  // `axes` read as a mixed-radix number, the first listed axis most significant (so member i
  // is the one that holds block i when a tensor dimension is split over `axes`). Groups are
  // ordered by the coordinates of the remaining axes, row-major. These are the rank groups
  // of a collective along `axes`.
  std::vector<std::vector<int>> Groups(const std::vector<int>& axes) const;
  // The group of Groups(axes) that contains `rank`.
  std::vector<int> GroupOf(int rank, const std::vector<int>& axes) const;
  // Position of `rank` inside GroupOf(rank, axes): its coordinates along `axes`, mixed
  // radix, first axis most significant.
  int64_t IndexInGroup(int rank, const std::vector<int>& axes) const;
  // Product of the sizes of `axes` (1 for none).
  int64_t GroupSize(const std::vector<int>& axes) const;

  // "mesh(dp=2,sp=2,mp=2)", or "mesh(dp=2,sp=2,mp=2,ranks=[0,2,1,3,...])" when the rank
  // list is explicit; "mesh()" for the one-device mesh. ParseMeshSpec() reads it back.
  std::string ToString() const;

  size_t Hash() const;
  friend bool operator==(const DeviceMesh& a, const DeviceMesh& b) {
    if (a.rep_ == b.rep_) return true;
    const Rep& x = a.rep();
    const Rep& y = b.rep();
    return x.shape == y.shape && x.names == y.names && x.ranks == y.ranks;
  }

 private:
  // The immutable data, shared by all copies of a mesh.
  struct Rep {
    Shape shape;
    std::vector<std::string> names;
    int size = 1;
    std::vector<int> ranks;     // empty = default order; else rank at each grid position
    std::vector<int> position;  // inverse of ranks: grid position of each rank
  };
  static const Rep kOneDevice;
  // Null (default-constructed or moved-from mesh) is the one-device mesh.
  const Rep& rep() const { return rep_ ? *rep_ : kOneDevice; }

  std::shared_ptr<const Rep> rep_;
};

inline const DeviceMesh::Rep DeviceMesh::kOneDevice{};

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh);

// Parses the seeds' (MindSpore) mesh notation, e.g.
//   Layout((2, 2, 2), ("dp", "sp", "mp"))
//   Layout((8,), name=("tp",))
//   ms.Layout((2, 2), alias_name=['a', 'b'], rank_list=(3, 2, 1, 0))
// The callee is `Layout` or `DeviceMesh`, optionally with a dotted module prefix; tuples may
// be written with () or [] and may have a trailing comma; strings use ' or "; whitespace is
// free. Positional arguments: shape, names, rank list; keywords: device_matrix, alias_name
// or name, rank_list or ranks. Syntax errors give the (1-based) column and what was
// expected; mesh errors are those of DeviceMesh::Create().
Result<DeviceMesh> ParseMeshExpr(std::string_view text);

// Parses the short mesh form: "dp=2,sp=2,mp=2", optionally wrapped as "mesh(...)" and
// optionally followed by ",ranks=[...]" — i.e. whatever DeviceMesh::ToString() prints. An
// empty text or "mesh()" is the one-device mesh.
Result<DeviceMesh> ParseMeshSpec(std::string_view text);

}  // namespace shardscope

template <>
struct std::hash<shardscope::DeviceMesh> {
  size_t operator()(const shardscope::DeviceMesh& mesh) const { return mesh.Hash(); }
};

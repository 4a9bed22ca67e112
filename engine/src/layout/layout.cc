#include "shardscope/layout/layout.h"

#include <algorithm>
#include <cassert>
#include <ostream>
#include <utility>

#include "shardscope/base/hash.h"
#include "shardscope/checked_math.h"

namespace shardscope {

namespace {

constexpr int kUnused = -1;
constexpr int kPartial = -2;

}  // namespace

Status Layout::Validate(const DeviceMesh& mesh, const DimAxes& dims_axes,
                        const std::vector<int>& partial_axes, const Shape& shape) {
  if (dims_axes.size() != shape.size()) {
    return Status::Invalid("layout has " + std::to_string(dims_axes.size()) +
                           " dimension entries but the tensor shape " + ShapeToString(shape) +
                           " has " + std::to_string(shape.size()) + " dimensions");
  }
  const int num_axes = mesh.num_axes();
  auto axis_label = [&](int a) { return "mesh axis '" + mesh.axis_name(a) + "'"; };
  std::vector<int> owner(num_axes, kUnused);
  // (Messages are built only on failure: layouts are validated on every plan.)
  auto dim_label = [](size_t d) { return "dimension " + std::to_string(d); };
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return Status::Invalid(dim_label(d) + " has negative size " + std::to_string(shape[d]));
    }
    int64_t product = 1;
    for (int a : dims_axes[d]) {
      if (a < 0 || a >= num_axes) {
        return Status::Invalid(dim_label(d) + " uses mesh axis index " + std::to_string(a) +
                               ", out of range: " + mesh.ToString() + " has " +
                               std::to_string(num_axes) + " axes");
      }
      if (owner[a] == static_cast<int>(d)) {
        return Status::Invalid(axis_label(a) + " is used twice by " + dim_label(d));
      }
      if (owner[a] >= 0) {
        return Status::Invalid(axis_label(a) + " is used twice: by dimension " +
                               std::to_string(owner[a]) + " and by " + dim_label(d));
      }
      owner[a] = static_cast<int>(d);
      product *= mesh.axis_size(a);
    }
    if (shape[d] % product != 0) {
      std::string factors;
      for (int a : dims_axes[d]) {
        if (!factors.empty()) factors += " x ";
        factors += mesh.axis_name(a) + "=" + std::to_string(mesh.axis_size(a));
      }
      return Status::Invalid(dim_label(d) + " of size " + std::to_string(shape[d]) +
                             " is not divisible by " + std::to_string(product) +
                             ", the product of its mesh axes " + factors);
    }
  }
  if (!CheckedNumElements(shape)) {
    return Status::Invalid("tensor shape " + ShapeToString(shape) + " has " + CountText(shape) +
                           " elements, which does not fit in 63 bits");
  }
  for (int a : partial_axes) {
    if (a < 0 || a >= num_axes) {
      return Status::Invalid("partial axis index " + std::to_string(a) + " is out of range: " +
                             mesh.ToString() + " has " + std::to_string(num_axes) + " axes");
    }
    if (owner[a] == kPartial) {
      return Status::Invalid(axis_label(a) + " is listed twice as partial");
    }
    if (owner[a] >= 0) {
      return Status::Invalid(axis_label(a) + " is partial but also splits dimension " +
                             std::to_string(owner[a]));
    }
    owner[a] = kPartial;
  }
  return Status::Ok();
}

Result<Layout> Layout::Create(DeviceMesh mesh, DimAxes dims_axes, std::vector<int> partial_axes,
                              Shape shape) {
  SHARDSCOPE_RETURN_IF_ERROR(Validate(mesh, dims_axes, partial_axes, shape));
  std::sort(partial_axes.begin(), partial_axes.end());
  Layout layout;
  layout.rep_ = std::make_shared<const Rep>(
      Rep{std::move(mesh), std::move(shape), std::move(dims_axes), std::move(partial_axes)});
  return layout;
}

Result<Layout> Layout::CreateByName(DeviceMesh mesh,
                                    const std::vector<std::vector<std::string>>& dims_axes,
                                    const std::vector<std::string>& partial_axes, Shape shape) {
  DimAxes dims;
  dims.reserve(dims_axes.size());
  for (size_t d = 0; d < dims_axes.size(); ++d) {
    Result<std::vector<int>> axes = mesh.axis_indices(dims_axes[d]);
    if (!axes.ok()) return axes.status().WithContext("dimension " + std::to_string(d));
    dims.push_back(std::move(axes).value());
  }
  Result<std::vector<int>> partial = mesh.axis_indices(partial_axes);
  if (!partial.ok()) return partial.status().WithContext("partial axes");
  return Create(std::move(mesh), std::move(dims), std::move(partial).value(), std::move(shape));
}

Layout Layout::Replicated(DeviceMesh mesh, Shape shape) {
  assert(std::all_of(shape.begin(), shape.end(), [](int64_t s) { return s >= 0; }));
  DimAxes unsplit(shape.size());
  Layout layout;
  layout.rep_ = std::make_shared<const Rep>(
      Rep{std::move(mesh), std::move(shape), std::move(unsplit), std::vector<int>()});
  return layout;
}

std::vector<int> Layout::replica_axes() const {
  std::vector<int> out;
  for (int a = 0; a < rep().mesh.num_axes(); ++a) {
    if (DimOfAxis(a) < 0 && !IsPartialOver(a)) out.push_back(a);
  }
  return out;
}

int Layout::DimOfAxis(int axis) const {
  for (size_t d = 0; d < rep().dims_axes.size(); ++d) {
    if (std::find(rep().dims_axes[d].begin(), rep().dims_axes[d].end(), axis) !=
        rep().dims_axes[d].end()) {
      return static_cast<int>(d);
    }
  }
  return -1;
}

bool Layout::IsPartialOver(int axis) const {
  return std::binary_search(rep().partial_axes.begin(), rep().partial_axes.end(), axis);
}

std::vector<int64_t> Layout::BlocksPerDim() const {
  std::vector<int64_t> out(rep().dims_axes.size());
  for (size_t d = 0; d < rep().dims_axes.size(); ++d)
    out[d] = rep().mesh.GroupSize(rep().dims_axes[d]);
  return out;
}

int64_t Layout::NumBlocks() const {
  int64_t n = 1;
  for (int64_t b : BlocksPerDim()) n *= b;
  return n;
}

int64_t Layout::ReplicationFactor() const { return rep().mesh.GroupSize(replica_axes()); }

int64_t Layout::PartialFactor() const { return rep().mesh.GroupSize(rep().partial_axes); }

Shape Layout::ShardShape() const {
  Shape out = rep().shape;
  for (size_t d = 0; d < out.size(); ++d) out[d] /= rep().mesh.GroupSize(rep().dims_axes[d]);
  return out;
}

std::vector<int64_t> Layout::BlockIndex(int rank) const {
  const std::vector<int64_t> coords = rep().mesh.coords_of(rank);
  std::vector<int64_t> out(rep().dims_axes.size(), 0);
  for (size_t d = 0; d < rep().dims_axes.size(); ++d) {
    int64_t index = 0;
    for (int a : rep().dims_axes[d]) index = index * rep().mesh.axis_size(a) + coords[a];
    out[d] = index;
  }
  return out;
}

int64_t Layout::LinearBlockIndex(int rank) const {
  const std::vector<int64_t> block = BlockIndex(rank);
  const std::vector<int64_t> per_dim = BlocksPerDim();
  int64_t index = 0;
  for (size_t d = 0; d < block.size(); ++d) index = index * per_dim[d] + block[d];
  return index;
}

std::vector<int64_t> Layout::ShardOffsets(int rank) const {
  std::vector<int64_t> out = BlockIndex(rank);
  const Shape shard = ShardShape();
  for (size_t d = 0; d < out.size(); ++d) out[d] *= shard[d];
  return out;
}

std::vector<int> Layout::ReplicaGroup(int rank) const {
  return rep().mesh.GroupOf(rank, replica_axes());
}

std::vector<int> Layout::PartialGroup(int rank) const {
  return rep().mesh.GroupOf(rank, rep().partial_axes);
}

std::vector<std::vector<int64_t>> Layout::RankBlocks() const {
  std::vector<std::vector<int64_t>> out(rep().mesh.size());
  for (int r = 0; r < rep().mesh.size(); ++r) out[r] = BlockIndex(r);
  return out;
}

std::vector<std::vector<int>> Layout::BlockOwners() const {
  std::vector<std::vector<int>> out(NumBlocks());
  for (int r = 0; r < rep().mesh.size(); ++r) out[LinearBlockIndex(r)].push_back(r);
  return out;
}

std::string Layout::ToString() const {
  std::string out = "[";
  for (size_t d = 0; d < rep().dims_axes.size(); ++d) {
    if (d) out += " | ";
    if (rep().dims_axes[d].empty()) out += "-";
    for (size_t i = 0; i < rep().dims_axes[d].size(); ++i) {
      if (i) out += ".";
      out += rep().mesh.axis_name(rep().dims_axes[d][i]);
    }
  }
  out += "]";
  if (!rep().partial_axes.empty()) {
    out += " P(";
    for (size_t i = 0; i < rep().partial_axes.size(); ++i) {
      if (i) out += ",";
      out += rep().mesh.axis_name(rep().partial_axes[i]);
    }
    out += ")";
  }
  return out;
}

std::string Layout::ToSpec() const {
  std::string out;
  for (size_t d = 0; d < rep().dims_axes.size(); ++d) {
    if (d) out += ",";
    const std::vector<int>& axes = rep().dims_axes[d];
    if (axes.empty()) {
      out += "-";
    } else if (axes.size() == 1) {
      out += rep().mesh.axis_name(axes[0]);
    } else {
      out += "(";
      for (size_t i = 0; i < axes.size(); ++i) {
        if (i) out += ",";
        out += rep().mesh.axis_name(axes[i]);
      }
      out += ")";
    }
  }
  if (!rep().partial_axes.empty()) {
    out += "|P(";
    for (size_t i = 0; i < rep().partial_axes.size(); ++i) {
      if (i) out += ",";
      out += rep().mesh.axis_name(rep().partial_axes[i]);
    }
    out += ")";
  }
  return out;
}

std::string Layout::DebugString() const {
  return ToString() + " on " + rep().mesh.ToString() + " shape " + ShapeToString(rep().shape);
}

size_t Layout::Hash() const {
  size_t h = rep().mesh.Hash();
  h = HashCombine(h, rep().shape.size());
  for (int64_t s : rep().shape) h = HashCombine(h, std::hash<int64_t>()(s));
  for (const std::vector<int>& axes : rep().dims_axes) {
    h = HashCombine(h, 0x5151 + axes.size());
    for (int a : axes) h = HashCombine(h, std::hash<int>()(a));
  }
  h = HashCombine(h, 0xbeef + rep().partial_axes.size());
  for (int a : rep().partial_axes) h = HashCombine(h, std::hash<int>()(a));
  return h;
}

std::ostream& operator<<(std::ostream& os, const Layout& layout) { return os << layout.ToString(); }

}  // namespace shardscope

#include "shardscope/layout.h"

#include <algorithm>
#include <cassert>
#include <ostream>
#include <utility>

namespace shardscope {

namespace {

size_t HashCombine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

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
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::string dim = "dimension " + std::to_string(d);
    if (shape[d] < 0) {
      return Status::Invalid(dim + " has negative size " + std::to_string(shape[d]));
    }
    int64_t product = 1;
    std::string factors;
    for (int a : dims_axes[d]) {
      if (a < 0 || a >= num_axes) {
        return Status::Invalid(dim + " uses mesh axis index " + std::to_string(a) +
                               ", out of range: " + mesh.ToString() + " has " +
                               std::to_string(num_axes) + " axes");
      }
      if (owner[a] == static_cast<int>(d)) {
        return Status::Invalid(axis_label(a) + " is used twice by " + dim);
      }
      if (owner[a] >= 0) {
        return Status::Invalid(axis_label(a) + " is used twice: by dimension " +
                               std::to_string(owner[a]) + " and by " + dim);
      }
      owner[a] = static_cast<int>(d);
      product *= mesh.axis_size(a);
      if (!factors.empty()) factors += " x ";
      factors += mesh.axis_name(a) + "=" + std::to_string(mesh.axis_size(a));
    }
    if (shape[d] % product != 0) {
      return Status::Invalid(dim + " of size " + std::to_string(shape[d]) +
                             " is not divisible by " + std::to_string(product) +
                             ", the product of its mesh axes " + factors);
    }
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
  layout.mesh_ = std::move(mesh);
  layout.shape_ = std::move(shape);
  layout.dims_axes_ = std::move(dims_axes);
  layout.partial_axes_ = std::move(partial_axes);
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
  Layout layout;
  layout.mesh_ = std::move(mesh);
  layout.dims_axes_.assign(shape.size(), {});
  layout.shape_ = std::move(shape);
  return layout;
}

std::vector<int> Layout::replica_axes() const {
  std::vector<int> out;
  for (int a = 0; a < mesh_.num_axes(); ++a) {
    if (DimOfAxis(a) < 0 && !IsPartialOver(a)) out.push_back(a);
  }
  return out;
}

int Layout::DimOfAxis(int axis) const {
  for (size_t d = 0; d < dims_axes_.size(); ++d) {
    if (std::find(dims_axes_[d].begin(), dims_axes_[d].end(), axis) != dims_axes_[d].end()) {
      return static_cast<int>(d);
    }
  }
  return -1;
}

bool Layout::IsPartialOver(int axis) const {
  return std::binary_search(partial_axes_.begin(), partial_axes_.end(), axis);
}

std::vector<int64_t> Layout::BlocksPerDim() const {
  std::vector<int64_t> out(dims_axes_.size());
  for (size_t d = 0; d < dims_axes_.size(); ++d) out[d] = mesh_.GroupSize(dims_axes_[d]);
  return out;
}

int64_t Layout::NumBlocks() const {
  int64_t n = 1;
  for (int64_t b : BlocksPerDim()) n *= b;
  return n;
}

int64_t Layout::ReplicationFactor() const { return mesh_.GroupSize(replica_axes()); }

int64_t Layout::PartialFactor() const { return mesh_.GroupSize(partial_axes_); }

Shape Layout::ShardShape() const {
  Shape out = shape_;
  for (size_t d = 0; d < out.size(); ++d) out[d] /= mesh_.GroupSize(dims_axes_[d]);
  return out;
}

std::vector<int64_t> Layout::BlockIndex(int rank) const {
  const std::vector<int64_t> coords = mesh_.coords_of(rank);
  std::vector<int64_t> out(dims_axes_.size(), 0);
  for (size_t d = 0; d < dims_axes_.size(); ++d) {
    int64_t index = 0;
    for (int a : dims_axes_[d]) index = index * mesh_.axis_size(a) + coords[a];
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
  return mesh_.GroupOf(rank, replica_axes());
}

std::vector<int> Layout::PartialGroup(int rank) const { return mesh_.GroupOf(rank, partial_axes_); }

std::vector<std::vector<int64_t>> Layout::RankBlocks() const {
  std::vector<std::vector<int64_t>> out(mesh_.size());
  for (int r = 0; r < mesh_.size(); ++r) out[r] = BlockIndex(r);
  return out;
}

std::vector<std::vector<int>> Layout::BlockOwners() const {
  std::vector<std::vector<int>> out(NumBlocks());
  for (int r = 0; r < mesh_.size(); ++r) out[LinearBlockIndex(r)].push_back(r);
  return out;
}

std::string Layout::ToString() const {
  std::string out = "[";
  for (size_t d = 0; d < dims_axes_.size(); ++d) {
    if (d) out += " | ";
    if (dims_axes_[d].empty()) out += "-";
    for (size_t i = 0; i < dims_axes_[d].size(); ++i) {
      if (i) out += ".";
      out += mesh_.axis_name(dims_axes_[d][i]);
    }
  }
  out += "]";
  if (!partial_axes_.empty()) {
    out += " P(";
    for (size_t i = 0; i < partial_axes_.size(); ++i) {
      if (i) out += ",";
      out += mesh_.axis_name(partial_axes_[i]);
    }
    out += ")";
  }
  return out;
}

std::string Layout::ToSpec() const {
  std::string out;
  for (size_t d = 0; d < dims_axes_.size(); ++d) {
    if (d) out += ",";
    const std::vector<int>& axes = dims_axes_[d];
    if (axes.empty()) {
      out += "-";
    } else if (axes.size() == 1) {
      out += mesh_.axis_name(axes[0]);
    } else {
      out += "(";
      for (size_t i = 0; i < axes.size(); ++i) {
        if (i) out += ",";
        out += mesh_.axis_name(axes[i]);
      }
      out += ")";
    }
  }
  if (!partial_axes_.empty()) {
    out += "|P(";
    for (size_t i = 0; i < partial_axes_.size(); ++i) {
      if (i) out += ",";
      out += mesh_.axis_name(partial_axes_[i]);
    }
    out += ")";
  }
  return out;
}

std::string Layout::DebugString() const {
  return ToString() + " on " + mesh_.ToString() + " shape " + ShapeToString(shape_);
}

size_t Layout::Hash() const {
  size_t h = mesh_.Hash();
  h = HashCombine(h, shape_.size());
  for (int64_t s : shape_) h = HashCombine(h, std::hash<int64_t>()(s));
  for (const std::vector<int>& axes : dims_axes_) {
    h = HashCombine(h, 0x5151 + axes.size());
    for (int a : axes) h = HashCombine(h, std::hash<int>()(a));
  }
  h = HashCombine(h, 0xbeef + partial_axes_.size());
  for (int a : partial_axes_) h = HashCombine(h, std::hash<int>()(a));
  return h;
}

std::ostream& operator<<(std::ostream& os, const Layout& layout) { return os << layout.ToString(); }

}  // namespace shardscope

#include "shardscope/layout/mesh.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <ostream>
#include <sstream>
#include <utility>

#include "shardscope/base/hash.h"

namespace shardscope {

namespace {

bool IsIdentifier(const std::string& s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !digit(c)) return false;
  }
  return true;
}

std::string TupleString(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + ")";
}

}  // namespace

DeviceMesh::DeviceMesh() = default;

Result<DeviceMesh> DeviceMesh::Create(Shape shape, std::vector<std::string> names,
                                      std::vector<int> ranks) {
  if (names.size() != shape.size()) {
    return Status::Invalid("mesh " + TupleString(shape) + " has " + std::to_string(shape.size()) +
                           " axes but " + std::to_string(names.size()) + " axis names were given");
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (name.empty()) {
      return Status::Invalid("mesh axis " + std::to_string(i) + " has an empty name");
    }
    if (!IsIdentifier(name)) {
      return Status::Invalid("mesh axis name '" + name + "' (axis " + std::to_string(i) +
                             ") is not an identifier (letters, digits and '_', not starting "
                             "with a digit)");
    }
    if (name == "None") {
      return Status::Invalid("mesh axis name 'None' (axis " + std::to_string(i) +
                             ") is reserved: it means 'not split' in layouts");
    }
    for (size_t j = 0; j < i; ++j) {
      if (names[j] == name) {
        return Status::Invalid("mesh axis name '" + name + "' is used twice (axes " +
                               std::to_string(j) + " and " + std::to_string(i) + ")");
      }
    }
  }
  int64_t total = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) {
      return Status::Invalid("mesh axis '" + names[i] + "' has size " + std::to_string(shape[i]) +
                             "; axis sizes must be >= 1");
    }
    if (total > INT_MAX / shape[i]) {
      return Status::Invalid("mesh " + TupleString(shape) + " has more than " +
                             std::to_string(INT_MAX) + " devices");
    }
    total *= shape[i];
  }
  const int n = static_cast<int>(total);

  auto rep = std::make_shared<Rep>();
  rep->size = n;
  if (!ranks.empty()) {
    if (static_cast<int64_t>(ranks.size()) != total) {
      return Status::Invalid("rank list has " + std::to_string(ranks.size()) +
                             " entries but mesh " + TupleString(shape) + " has " +
                             std::to_string(n) + " devices");
    }
    std::vector<int> position(n, -1);
    int duplicate = -1;
    int dup_first = -1;
    int dup_second = -1;
    for (int i = 0; i < n; ++i) {
      const int r = ranks[i];
      if (r < 0 || r >= n) {
        return Status::Invalid("rank " + std::to_string(r) + " at position " + std::to_string(i) +
                               " of the rank list is out of range [0, " + std::to_string(n) + ")");
      }
      if (position[r] >= 0) {
        if (duplicate < 0) {
          duplicate = r;
          dup_first = position[r];
          dup_second = i;
        }
        continue;
      }
      position[r] = i;
    }
    if (duplicate >= 0) {
      int missing = -1;
      for (int r = 0; r < n && missing < 0; ++r) {
        if (position[r] < 0) missing = r;
      }
      return Status::Invalid("rank list is not a permutation of 0.." + std::to_string(n - 1) +
                             ": rank " + std::to_string(duplicate) + " appears twice (positions " +
                             std::to_string(dup_first) + " and " + std::to_string(dup_second) +
                             ") and rank " + std::to_string(missing) + " is missing");
    }
    bool identity = true;
    for (int i = 0; i < n && identity; ++i) identity = ranks[i] == i;
    if (!identity) {
      rep->ranks = std::move(ranks);
      rep->position = std::move(position);
    }
  }
  rep->shape = std::move(shape);
  rep->names = std::move(names);
  DeviceMesh mesh;
  mesh.rep_ = std::move(rep);
  return mesh;
}

int64_t DeviceMesh::axis_size(int axis) const {
  assert(axis >= 0 && axis < num_axes());
  return rep().shape[axis];
}

const std::string& DeviceMesh::axis_name(int axis) const {
  assert(axis >= 0 && axis < num_axes());
  return rep().names[axis];
}

std::vector<int> DeviceMesh::rank_list() const {
  if (!rep().ranks.empty()) return rep().ranks;
  const int n = rep().size;  // (read once: the stores below could alias it)
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = i;
  return out;
}

int DeviceMesh::rank_at(const std::vector<int64_t>& coords) const {
  assert(static_cast<int>(coords.size()) == num_axes());
  int64_t pos = 0;
  for (int a = 0; a < num_axes(); ++a) {
    assert(coords[a] >= 0 && coords[a] < rep().shape[a]);
    pos = pos * rep().shape[a] + coords[a];
  }
  return rep().ranks.empty() ? static_cast<int>(pos) : rep().ranks[pos];
}

std::vector<int64_t> DeviceMesh::coords_of(int rank) const {
  assert(rank >= 0 && rank < rep().size);
  int64_t pos = rep().ranks.empty() ? rank : rep().position[rank];
  std::vector<int64_t> coords(rep().shape.size());
  for (int a = num_axes() - 1; a >= 0; --a) {
    coords[a] = pos % rep().shape[a];
    pos /= rep().shape[a];
  }
  return coords;
}

Result<int> DeviceMesh::axis_index(std::string_view name) const {
  for (int a = 0; a < num_axes(); ++a) {
    if (rep().names[a] == name) return a;
  }
  std::string known;
  for (int a = 0; a < num_axes(); ++a) known += (a ? ", " : "") + rep().names[a];
  return Status::NotFound("unknown mesh axis '" + std::string(name) + "' (" + ToString() +
                          " has axes: " + (known.empty() ? "none" : known) + ")");
}

Result<std::vector<int>> DeviceMesh::axis_indices(const std::vector<std::string>& names) const {
  std::vector<int> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    SHARDSCOPE_ASSIGN_OR_RETURN(int axis, axis_index(name));
    out.push_back(axis);
  }
  return out;
}

int64_t DeviceMesh::GroupSize(const std::vector<int>& axes) const {
  int64_t n = 1;
  for (int a : axes) n *= axis_size(a);
  return n;
}

std::vector<std::vector<int>> DeviceMesh::Groups(const std::vector<int>& axes) const {
  std::vector<bool> in_group(rep().shape.size(), false);
  for (int a : axes) {
    assert(a >= 0 && a < num_axes() && !in_group[a] && "Groups: invalid or repeated axis");
    in_group[a] = true;
  }
  std::vector<int> others;
  for (int a = 0; a < num_axes(); ++a) {
    if (!in_group[a]) others.push_back(a);
  }
  const int64_t num_groups = GroupSize(others);
  const int64_t members = GroupSize(axes);
  std::vector<std::vector<int>> groups(num_groups);
  std::vector<int64_t> coords(rep().shape.size(), 0);
  for (int64_t g = 0; g < num_groups; ++g) {
    int64_t rest = g;
    for (int i = static_cast<int>(others.size()) - 1; i >= 0; --i) {
      coords[others[i]] = rest % rep().shape[others[i]];
      rest /= rep().shape[others[i]];
    }
    groups[g].reserve(members);
    for (int64_t m = 0; m < members; ++m) {
      rest = m;
      for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
        coords[axes[i]] = rest % rep().shape[axes[i]];
        rest /= rep().shape[axes[i]];
      }
      groups[g].push_back(rank_at(coords));
    }
  }
  return groups;
}

std::vector<int> DeviceMesh::GroupOf(int rank, const std::vector<int>& axes) const {
  std::vector<int64_t> coords = coords_of(rank);
  const int64_t members = GroupSize(axes);
  std::vector<int> group;
  group.reserve(members);
  for (int64_t m = 0; m < members; ++m) {
    int64_t rest = m;
    for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
      assert(axes[i] >= 0 && axes[i] < num_axes());
      coords[axes[i]] = rest % rep().shape[axes[i]];
      rest /= rep().shape[axes[i]];
    }
    group.push_back(rank_at(coords));
  }
  return group;
}

int64_t DeviceMesh::IndexInGroup(int rank, const std::vector<int>& axes) const {
  const std::vector<int64_t> coords = coords_of(rank);
  int64_t index = 0;
  for (int a : axes) {
    assert(a >= 0 && a < num_axes());
    index = index * rep().shape[a] + coords[a];
  }
  return index;
}

std::string DeviceMesh::ToString() const {
  std::string out = "mesh(";
  for (int a = 0; a < num_axes(); ++a) {
    if (a) out += ",";
    out += rep().names[a] + "=" + std::to_string(rep().shape[a]);
  }
  if (!rep().ranks.empty()) {
    out += ",ranks=[";
    for (size_t i = 0; i < rep().ranks.size(); ++i) {
      if (i) out += ",";
      out += std::to_string(rep().ranks[i]);
    }
    out += "]";
  }
  return out + ")";
}

size_t DeviceMesh::Hash() const {
  size_t h = std::hash<size_t>()(rep().shape.size());
  for (int a = 0; a < num_axes(); ++a) {
    h = HashCombine(h, std::hash<int64_t>()(rep().shape[a]));
    h = HashCombine(h, std::hash<std::string>()(rep().names[a]));
  }
  for (int r : rep().ranks) h = HashCombine(h, std::hash<int>()(r));
  return h;
}

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh) { return os << mesh.ToString(); }

}  // namespace shardscope

// Mesh unification: the coarsest mesh of which two meshes over the same ranks are both
// regroupings.
//
// Method. Every axis of size s > 1 is cut into prime-sized digits (s = f1 f2 ... fm, f1 the
// most significant). A digit is a function rank -> [0, f). Two meshes are regroupings of one
// mesh exactly when, for some choice of the order of the prime factors of each axis, their
// digit functions are the same set. The common mesh then has one axis per digit, in a's
// digit order (so its rank list is a's); adjacent digits that belong to one axis of a and
// appear next to each other, in the same order, in one axis of b are merged back, giving the
// coarsest such mesh.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "redistribution_internal.h"
#include "shardscope/base/prime_factors.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope {

namespace {

// Distinct orders of the prime factors of n (most significant first).
std::vector<std::vector<int64_t>> FactorOrders(int64_t n) {
  std::vector<int64_t> f = PrimeFactors(n);
  std::sort(f.begin(), f.end());
  std::vector<std::vector<int64_t>> out;
  do {
    out.push_back(f);
  } while (std::next_permutation(f.begin(), f.end()));
  return out;
}

struct Digit {
  int axis;  // axis of its mesh
  int64_t size;
  std::vector<int> of;  // value per rank
};

std::vector<Digit> Digits(const DeviceMesh& mesh, const std::vector<int>& choice,
                          const std::vector<std::vector<std::vector<int64_t>>>& orders) {
  std::vector<Digit> out;
  const int n = mesh.size();
  std::vector<std::vector<int64_t>> coords(n);
  for (int r = 0; r < n; ++r) coords[r] = mesh.coords_of(r);
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (mesh.axis_size(a) == 1) continue;
    const std::vector<int64_t>& f = orders[a][choice[a]];
    int64_t below = 1;
    for (int64_t x : f) below *= x;
    for (int64_t x : f) {
      below /= x;
      Digit d{a, x, std::vector<int>(n)};
      for (int r = 0; r < n; ++r) d.of[r] = static_cast<int>((coords[r][a] / below) % x);
      out.push_back(std::move(d));
    }
  }
  return out;
}

constexpr int64_t kMaxCombos = 4096;

bool IsDefaultOrderIdentifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return !(s[0] >= '0' && s[0] <= '9') && s != "None";
}

// Number of distinct orders of the prime factors of n (a multinomial coefficient), by trial
// division: base's PrimeFactors returns a vector, and this runs on every plan (no allocation).
int64_t CountFactorOrders(int64_t n) {
  int64_t count = 1;
  int64_t placed = 0;
  // Choose the positions of each prime's m copies among placed + m: C(placed + m, m).
  for (int64_t f = 2; f * f <= n; ++f) {
    for (int64_t k = 1; n % f == 0; ++k) {
      n /= f;
      ++placed;
      count = count * placed / k;
    }
  }
  if (n > 1) {
    ++placed;
    count = count * placed;
  }
  return count;
}

// The unification of two meshes with the same rank order (both default, or the same explicit
// list), without enumerating factor orders: their grids are mixed-radix decompositions of
// the same grid position, so a digit (pos / s) % f of one equals a digit of the other only if
// s and f are equal. The meshes unify exactly when the axis boundaries (strides) of both,
// merged, form a chain in which each divides the next; the unified mesh has one axis per
// link of that chain. This is what the general search below finds (every matching choice of
// factor orders gives the same runs), including its names.
Result<MeshUnification> UnifySameOrder(const DeviceMesh& a, const DeviceMesh& b) {
  const int64_t n = a.size();
  // Boundaries: the stride of every axis of size > 1 and the stride above it.
  auto cuts_of = [&](const DeviceMesh& m) {
    std::vector<int64_t> cuts = {n};
    int64_t stride = n;
    for (int x = 0; x < m.num_axes(); ++x) {
      stride /= m.axis_size(x);
      if (m.axis_size(x) > 1) cuts.push_back(stride);
    }
    return cuts;  // decreasing, ends with 1 unless the mesh has one device
  };
  std::vector<int64_t> cuts = cuts_of(a);
  for (int64_t c : cuts_of(b)) cuts.push_back(c);
  cuts.push_back(1);
  std::sort(cuts.begin(), cuts.end(), std::greater<int64_t>());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    if (cuts[k] % cuts[k + 1] != 0) {
      return Status::Invalid("meshes " + a.ToString() + " and " + b.ToString() +
                             " have no common refinement (their rank orders are unrelated)");
    }
  }
  // Segment k spans strides [cuts[k + 1], cuts[k]): the k-th axis of the unified mesh.
  const int num_segments = static_cast<int>(cuts.size()) - 1;
  auto axes_of = [&](const DeviceMesh& m) {
    std::vector<std::vector<int>> out(m.num_axes());
    int64_t stride = n;
    for (int x = 0; x < m.num_axes(); ++x) {
      const int64_t hi = stride;
      stride /= m.axis_size(x);
      if (m.axis_size(x) == 1) continue;
      for (int k = 0; k < num_segments; ++k) {
        if (cuts[k] <= hi && cuts[k + 1] >= stride) out[x].push_back(k);
      }
    }
    return out;
  };
  MeshUnification u;
  u.axes_of_a = axes_of(a);
  u.axes_of_b = axes_of(b);
  std::vector<int> axis_of_segment(num_segments, -1);
  for (int x = 0; x < a.num_axes(); ++x) {
    for (int k : u.axes_of_a[x]) axis_of_segment[k] = x;
  }
  // Names: as the general search below gives them.
  Shape shape;
  std::vector<std::string> names;  // (also the names taken: a few axes, a linear search)
  for (int k = 0; k < num_segments; ++k) {
    shape.push_back(cuts[k] / cuts[k + 1]);
    const int ax = axis_of_segment[k];
    std::string name;
    if (u.axes_of_a[ax].size() == 1) {
      name = a.axis_name(ax);
    } else {
      for (int x = 0; x < b.num_axes(); ++x) {
        if (u.axes_of_b[x].size() == 1 && u.axes_of_b[x][0] == k) name = b.axis_name(x);
      }
      bool clash = name.empty();
      for (int y = 0; y < a.num_axes() && !clash; ++y) clash = a.axis_name(y) == name;
      if (clash) {
        const auto& sub = u.axes_of_a[ax];
        const int pos = static_cast<int>(std::find(sub.begin(), sub.end(), k) - sub.begin());
        name = a.axis_name(ax) + "_" + std::to_string(pos);
      }
    }
    while (std::find(names.begin(), names.end(), name) != names.end() ||
           !IsDefaultOrderIdentifier(name))
      name += "_";
    names.push_back(std::move(name));
  }
  bool same_as_a = static_cast<int>(shape.size()) == a.num_axes();
  for (int x = 0; x < a.num_axes() && same_as_a; ++x) {
    same_as_a = a.axis_size(x) == shape[x] && a.axis_name(x) == names[x];
  }
  if (same_as_a) {
    u.mesh = a;
    return u;
  }
  Result<DeviceMesh> mesh =
      DeviceMesh::Create(shape, names, a.has_explicit_ranks() ? a.rank_list() : std::vector<int>{});
  if (!mesh.ok()) return mesh.status().WithContext("unifying meshes");
  u.mesh = *mesh;
  return u;
}

}  // namespace

Result<MeshUnification> UnifyMeshes(const DeviceMesh& a, const DeviceMesh& b) {
  if (a.size() != b.size()) {
    return Status::Invalid("meshes " + a.ToString() + " and " + b.ToString() +
                           " have different numbers of devices (" + std::to_string(a.size()) +
                           " and " + std::to_string(b.size()) + ")");
  }
  if (a == b) {
    // The same mesh: itself, when it has no size-1 axes (UnifySameOrder's result).
    bool trivial = true;
    for (int x = 0; x < a.num_axes() && trivial; ++x) trivial = a.axis_size(x) > 1;
    if (trivial) {
      MeshUnification u;
      u.mesh = a;
      for (int x = 0; x < a.num_axes(); ++x) u.axes_of_a.push_back({x});
      u.axes_of_b = u.axes_of_a;
      return u;
    }
  }
  const bool same_order = a.has_explicit_ranks() == b.has_explicit_ranks() &&
                          (!a.has_explicit_ranks() || a.rank_list() == b.rank_list());
  if (!same_order) return redist_internal::UnifyMeshesGeneral(a, b);
  // The general search gives up beyond kMaxCombos factor orders; so does this.
  int64_t combos = 1;
  for (const DeviceMesh* m : {&a, &b}) {
    for (int x = 0; x < m->num_axes(); ++x) {
      combos = std::min<int64_t>(combos * CountFactorOrders(m->axis_size(x)), 1 << 20);
    }
  }
  if (combos > kMaxCombos) return redist_internal::UnifyMeshesGeneral(a, b);
  return UnifySameOrder(a, b);
}

// The general unification: tries every choice of prime factor orders of both meshes.
Result<MeshUnification> redist_internal::UnifyMeshesGeneral(const DeviceMesh& a,
                                                            const DeviceMesh& b) {
  if (a.size() != b.size()) {
    return Status::Invalid("meshes " + a.ToString() + " and " + b.ToString() +
                           " have different numbers of devices (" + std::to_string(a.size()) +
                           " and " + std::to_string(b.size()) + ")");
  }
  auto orders_of = [](const DeviceMesh& m) {
    std::vector<std::vector<std::vector<int64_t>>> orders(m.num_axes());
    for (int x = 0; x < m.num_axes(); ++x) orders[x] = FactorOrders(m.axis_size(x));
    return orders;
  };
  const auto orders_a = orders_of(a);
  const auto orders_b = orders_of(b);
  // Enumerate the factor orders of both meshes (mixed radix), bounded.
  std::vector<int64_t> radix;
  for (const auto& o : orders_a) radix.push_back(static_cast<int64_t>(o.size()));
  for (const auto& o : orders_b) radix.push_back(static_cast<int64_t>(o.size()));
  int64_t combos = 1;
  for (int64_t r : radix) combos = std::min<int64_t>(combos * r, 1 << 20);
  const std::string unrelated = "meshes " + a.ToString() + " and " + b.ToString() +
                                " have no common refinement (their rank orders are unrelated)";
  if (combos > kMaxCombos) return Status::Invalid(unrelated + " [too many factor orders]");

  for (int64_t combo = 0; combo < combos; ++combo) {
    std::vector<int> ca(a.num_axes()), cb(b.num_axes());
    int64_t rest = combo;
    for (int x = 0; x < a.num_axes(); ++x) {
      ca[x] = static_cast<int>(rest % radix[x]);
      rest /= radix[x];
    }
    for (int x = 0; x < b.num_axes(); ++x) {
      cb[x] = static_cast<int>(rest % radix[a.num_axes() + x]);
      rest /= radix[a.num_axes() + x];
    }
    std::vector<Digit> da = Digits(a, ca, orders_a);
    std::vector<Digit> db = Digits(b, cb, orders_b);
    if (da.size() != db.size()) continue;
    std::map<std::vector<int>, int> index_a;
    for (size_t i = 0; i < da.size(); ++i) index_a[da[i].of] = static_cast<int>(i);
    std::vector<int> match(db.size(), -1);  // digit of b -> digit of a
    bool ok = index_a.size() == da.size();
    std::vector<bool> used(da.size(), false);
    for (size_t j = 0; ok && j < db.size(); ++j) {
      auto it = index_a.find(db[j].of);
      if (it == index_a.end() || used[it->second] || da[it->second].size != db[j].size) {
        ok = false;
        break;
      }
      used[it->second] = true;
      match[j] = it->second;
    }
    if (!ok) continue;

    // Atoms = a's digits. b's axes as atom lists.
    const int num_atoms = static_cast<int>(da.size());
    std::vector<std::vector<int>> b_atoms(b.num_axes());
    for (size_t j = 0; j < db.size(); ++j) b_atoms[db[j].axis].push_back(match[j]);
    // link[i]: atoms i and i+1 merge.
    std::vector<bool> link(std::max(0, num_atoms - 1), false);
    for (const std::vector<int>& list : b_atoms) {
      for (size_t k = 0; k + 1 < list.size(); ++k) {
        const int i = list[k];
        if (list[k + 1] == i + 1 && da[i].axis == da[i + 1].axis) link[i] = true;
      }
    }
    std::vector<int> run_of(num_atoms);
    std::vector<std::vector<int>> runs;
    for (int i = 0; i < num_atoms; ++i) {
      if (i == 0 || !link[i - 1]) runs.emplace_back();
      runs.back().push_back(i);
      run_of[i] = static_cast<int>(runs.size()) - 1;
    }
    MeshUnification u;
    u.axes_of_a.assign(a.num_axes(), {});
    u.axes_of_b.assign(b.num_axes(), {});
    for (int i = 0; i < num_atoms; ++i) {
      std::vector<int>& list = u.axes_of_a[da[i].axis];
      if (list.empty() || list.back() != run_of[i]) list.push_back(run_of[i]);
    }
    for (int x = 0; x < b.num_axes(); ++x) {
      for (int i : b_atoms[x]) {
        std::vector<int>& list = u.axes_of_b[x];
        if (list.empty() || list.back() != run_of[i]) list.push_back(run_of[i]);
      }
    }
    // Names and sizes.
    Shape shape;
    std::vector<std::string> names;
    std::set<std::string> taken;
    for (size_t k = 0; k < runs.size(); ++k) {
      int64_t size = 1;
      for (int i : runs[k]) size *= da[i].size;
      shape.push_back(size);
      const int ax = da[runs[k][0]].axis;
      std::string name;
      if (u.axes_of_a[ax].size() == 1) {
        name = a.axis_name(ax);
      } else {
        for (int x = 0; x < b.num_axes(); ++x) {
          if (u.axes_of_b[x].size() == 1 && u.axes_of_b[x][0] == static_cast<int>(k)) {
            name = b.axis_name(x);
          }
        }
        bool clash = name.empty();
        for (int y = 0; y < a.num_axes() && !clash; ++y) clash = a.axis_name(y) == name;
        if (clash) {
          const auto& sub = u.axes_of_a[ax];
          const int pos = static_cast<int>(std::find(sub.begin(), sub.end(), k) - sub.begin());
          name = a.axis_name(ax) + "_" + std::to_string(pos);
        }
      }
      while (taken.count(name) || !IsDefaultOrderIdentifier(name)) name += "_";
      taken.insert(name);
      names.push_back(name);
    }
    Result<DeviceMesh> mesh = DeviceMesh::Create(shape, names, a.rank_list());
    if (!mesh.ok()) return mesh.status().WithContext("unifying meshes");
    u.mesh = *mesh;
    return u;
  }
  return Status::Invalid(unrelated);
}

Result<Layout> ExpressOnMesh(const Layout& layout, const DeviceMesh& mesh,
                             const std::vector<std::vector<int>>& axes_map) {
  if (static_cast<int>(axes_map.size()) != layout.mesh().num_axes()) {
    return Status::Invalid("ExpressOnMesh: the axis map has " + std::to_string(axes_map.size()) +
                           " entries but " + layout.mesh().ToString() + " has " +
                           std::to_string(layout.mesh().num_axes()) + " axes");
  }
  DimAxes dims(layout.rank());
  for (int d = 0; d < layout.rank(); ++d) {
    for (int x : layout.dim_axes(d)) {
      dims[d].insert(dims[d].end(), axes_map[x].begin(), axes_map[x].end());
    }
  }
  std::vector<int> partial;
  for (int x : layout.partial_axes()) {
    partial.insert(partial.end(), axes_map[x].begin(), axes_map[x].end());
  }
  Result<Layout> out = Layout::Create(mesh, std::move(dims), std::move(partial), layout.shape());
  if (!out.ok())
    return out.status().WithContext("expressing " + layout.ToString() + " on " + mesh.ToString());
  return out;
}

}  // namespace shardscope

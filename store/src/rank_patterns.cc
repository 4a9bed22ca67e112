#include "shardscope/store/rank_patterns.h"

#include <algorithm>

namespace shardscope::store {
namespace {

// Products and sums of numbers a damaged file may hold: wrap instead of overflowing.
int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }
int64_t MulAdd(int64_t base, int64_t k, int64_t step) {
  return Wrap(static_cast<uint64_t>(base) + static_cast<uint64_t>(k) * static_cast<uint64_t>(step));
}

int64_t Count(const std::vector<GridAxis>& axes) {
  int64_t n = 1;
  for (const GridAxis& a : axes) {
    if (a.size <= 0) return 0;
    n = n > std::numeric_limits<int64_t>::max() / a.size ? std::numeric_limits<int64_t>::max()
                                                         : n * a.size;
  }
  return n;
}

// The rank offset of position `index` (mixed radix over `axes`, first most significant).
int64_t Position(const std::vector<GridAxis>& axes, int64_t index) {
  int64_t rank = 0;
  for (size_t k = axes.size(); k-- > 0;) {
    const GridAxis& a = axes[k];
    rank = MulAdd(rank, index % a.size, a.stride);
    index /= a.size;
  }
  return rank;
}

}  // namespace

RankGroups::RankGroups(std::vector<std::vector<int64_t>> list) : list_(std::move(list)) {}
RankGroups::RankGroups(std::initializer_list<std::vector<int64_t>> list) : list_(list) {}

RankGroups RankGroups::Grid(int64_t first, std::vector<GridAxis> members,
                            std::vector<GridAxis> groups) {
  RankGroups g;
  g.grid_ = true;
  g.first_ = first;
  g.members_ = std::move(members);
  g.groups_ = std::move(groups);
  return g;
}

int64_t RankGroups::size() const {
  if (!grid_) return static_cast<int64_t>(list_.size());
  return Count(members_) == 0 ? 0 : Count(groups_);
}

int64_t RankGroups::group_size() const {
  if (grid_) return Count(members_);
  return list_.empty() ? 0 : static_cast<int64_t>(list_.front().size());
}

std::vector<int64_t> RankGroups::Group(int64_t index) const {
  if (!grid_) return list_[static_cast<size_t>(index)];
  const int64_t base =
      Wrap(static_cast<uint64_t>(first_) + static_cast<uint64_t>(Position(groups_, index)));
  std::vector<int64_t> group(static_cast<size_t>(group_size()));
  for (size_t i = 0; i < group.size(); ++i) {
    group[i] = Wrap(static_cast<uint64_t>(base) +
                    static_cast<uint64_t>(Position(members_, static_cast<int64_t>(i))));
  }
  return group;
}

std::vector<std::vector<int64_t>> RankGroups::Expand() const {
  if (!grid_) return list_;
  std::vector<std::vector<int64_t>> all;
  const int64_t n = size();
  all.reserve(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) all.push_back(Group(g));
  return all;
}

bool operator==(const RankGroups& a, const RankGroups& b) {
  if (a.grid_ && b.grid_ && a.first_ == b.first_ && a.members_ == b.members_ &&
      a.groups_ == b.groups_) {
    return true;
  }
  if (a.size() != b.size()) return false;
  for (int64_t g = 0; g < a.size(); ++g) {
    if (a.Group(g) != b.Group(g)) return false;
  }
  return true;
}

TransferList::TransferList(const std::vector<TransferRecord>& list) {
  for (const TransferRecord& t : list) Add(t);
}
TransferList::TransferList(std::initializer_list<TransferRecord> list) {
  for (const TransferRecord& t : list) Add(t);
}

void TransferList::Add(int64_t src, int64_t dst, const std::vector<int64_t>& offset,
                       const std::vector<int64_t>& extent) {
  const size_t n = 2 + offset.size() + extent.size();
  const auto at = [&](size_t k) {
    return k == 0                  ? src
           : k == 1                ? dst
           : k < 2 + offset.size() ? offset[k - 2]
                                   : extent[k - 2 - offset.size()];
  };
  ++size_;
  if (!runs_.empty()) {
    Run& last = runs_.back();
    if (last.first.size() == n && last.offset_dims == static_cast<int64_t>(offset.size())) {
      if (last.count == 1) {
        for (size_t k = 0; k < n; ++k)
          last.delta[k] = Wrap(static_cast<uint64_t>(at(k)) - static_cast<uint64_t>(last.first[k]));
        last.count = 2;
        return;
      }
      bool continues = true;
      for (size_t k = 0; k < n && continues; ++k)
        continues = at(k) == MulAdd(last.first[k], last.count, last.delta[k]);
      if (continues) {
        ++last.count;
        return;
      }
    }
  }
  Run run;
  run.count = 1;
  run.offset_dims = static_cast<int64_t>(offset.size());
  run.first.resize(n);
  run.delta.assign(n, 0);
  for (size_t k = 0; k < n; ++k) run.first[k] = at(k);
  starts_.push_back(size_ - 1);
  runs_.push_back(std::move(run));
}

void TransferList::AddRun(Run run) {
  starts_.push_back(size_);
  size_ = Wrap(static_cast<uint64_t>(size_) + static_cast<uint64_t>(run.count));
  runs_.push_back(std::move(run));
}

TransferRecord TransferList::at(int64_t index) const {
  const size_t r = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) -
                                       starts_.begin()) -
                   1;
  const Run& run = runs_[r];
  const int64_t j = index - starts_[r];
  const auto value = [&](size_t k) { return MulAdd(run.first[k], j, run.delta[k]); };
  TransferRecord t;
  t.src = value(0);
  t.dst = value(1);
  const size_t offsets = static_cast<size_t>(run.offset_dims);
  for (size_t k = 2; k < run.first.size(); ++k) {
    (k < 2 + offsets ? t.offset : t.extent).push_back(value(k));
  }
  return t;
}

std::vector<TransferRecord> TransferList::Expand(int64_t limit) const {
  std::vector<TransferRecord> out;
  const int64_t n = std::min(limit, size_);
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, n)));
  for (int64_t i = 0; i < n; ++i) out.push_back(at(i));
  return out;
}

}  // namespace shardscope::store

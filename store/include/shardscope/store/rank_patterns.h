// Rank groups and transfer lists kept by their pattern (docs/run-format.md, "Patterns"), so a
// step over 4096 ranks costs a few numbers, not a row of every rank or pair.
//
// RankGroups: an explicit list, or a grid (a collective along mesh axes of a row-major mesh):
// group g, member i is first + sum_k g_k * groups[k].stride + sum_k i_k * members[k].stride
// (g and i in mixed radix, the first axis most significant). TransferList: runs of transfers
// whose numbers (src, dst, offset..., extent...) step by a constant. Both expand on demand.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace shardscope::store {

// One piece of an irregular exchange: the box [offset, offset + extent) goes src -> dst.
struct TransferRecord {
  int64_t src = 0;
  int64_t dst = 0;
  std::vector<int64_t> offset;
  std::vector<int64_t> extent;
  friend bool operator==(const TransferRecord&, const TransferRecord&) = default;
};

// One axis of a grid: `size` positions, `stride` ranks apart.
struct GridAxis {
  int64_t size = 0;
  int64_t stride = 0;
  friend bool operator==(const GridAxis&, const GridAxis&) = default;
};

class RankGroups {
 public:
  RankGroups() = default;
  RankGroups(std::vector<std::vector<int64_t>> list);            // NOLINT: explicit list
  RankGroups(std::initializer_list<std::vector<int64_t>> list);  // NOLINT
  static RankGroups Grid(int64_t first, std::vector<GridAxis> members,
                         std::vector<GridAxis> groups);

  bool is_grid() const { return grid_; }
  int64_t size() const;  // number of groups
  bool empty() const { return size() == 0; }
  int64_t group_size() const;  // members per group (grid), else the first group's
  std::vector<int64_t> Group(int64_t index) const;  // 0 <= index < size()
  std::vector<std::vector<int64_t>> Expand() const;

  // The grid's parts (is_grid()), or the explicit list.
  int64_t first() const { return first_; }
  const std::vector<GridAxis>& members() const { return members_; }
  const std::vector<GridAxis>& groups() const { return groups_; }
  const std::vector<std::vector<int64_t>>& list() const { return list_; }

  // Equal when they list the same groups, whichever form each has.
  friend bool operator==(const RankGroups& a, const RankGroups& b);

 private:
  bool grid_ = false;
  int64_t first_ = 0;
  std::vector<GridAxis> members_, groups_;
  std::vector<std::vector<int64_t>> list_;
};

class TransferList {
 public:
  // Transfers first + j * delta for 0 <= j < count, as tuples (src, dst, offset..., extent...).
  struct Run {
    int64_t count = 0;
    int64_t offset_dims = 0;  // how many of the tuple's numbers after src, dst are the offset
    std::vector<int64_t> first, delta;
    friend bool operator==(const Run&, const Run&) = default;
  };

  TransferList() = default;
  TransferList(const std::vector<TransferRecord>& list);     // NOLINT: explicit list
  TransferList(std::initializer_list<TransferRecord> list);  // NOLINT
  // Appends a transfer, extending the last run when it continues its progression.
  void Add(int64_t src, int64_t dst, const std::vector<int64_t>& offset,
           const std::vector<int64_t>& extent);
  void Add(const TransferRecord& t) { Add(t.src, t.dst, t.offset, t.extent); }
  // Appends a run read back from a file (count >= 1, tuple sizes consistent: checked by caller).
  void AddRun(Run run);
  void clear() { *this = TransferList(); }

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TransferRecord at(int64_t index) const;  // 0 <= index < size()
  // The first min(limit, size()) transfers.
  std::vector<TransferRecord> Expand(int64_t limit = std::numeric_limits<int64_t>::max()) const;
  const std::vector<Run>& runs() const { return runs_; }

  friend bool operator==(const TransferList& a, const TransferList& b) {
    return a.size_ == b.size_ && a.runs_ == b.runs_;
  }

 private:
  std::vector<Run> runs_;
  std::vector<int64_t> starts_;  // index of each run's first transfer
  int64_t size_ = 0;
};

}  // namespace shardscope::store

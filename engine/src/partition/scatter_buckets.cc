// bucket-scattered-gradients (partition_passes.h): ZeRO 2/3 gradients packed into buckets in
// the order the schedule frees them, as the data-parallel all-reduces are (grad_buckets.h).
#include <algorithm>
#include <map>

#include "partition/partition_passes.h"

namespace shardscope {

void BucketScatteredGradients(const PartitionOptions& o, DistProgram* p) {
  p->scatter_buckets.clear();
  p->scatter_overlap = false;
  if (p->scattered_grad.empty()) return;
  struct Open {
    ScatterBucket bucket;
    int64_t last = 0;  // order in which its last member was freed
  };
  std::vector<Open> done;
  std::map<std::vector<std::vector<int>>, Open> open;  // one per set of rank groups
  int64_t freed = 0;
  for (size_t pos = 0; pos < p->release_after.size(); ++pos) {
    for (int v : p->release_after[pos]) {
      const int i = p->scattered_grad[v];
      if (i < 0) continue;
      ParamSharding& s = p->param_sharding[i];
      const DeviceMesh& mesh = p->values[p->param_grads[i].first].layout.mesh();
      Open& b = open[mesh.Groups(s.axes)];
      s.bucket_offset = b.bucket.slice;
      b.bucket.params.push_back(i);
      b.bucket.group_size = s.group_size;
      b.bucket.slice += s.chunk;
      b.bucket.after = static_cast<int>(pos);
      b.last = freed++;
      // Whole gradients, zero-padded: the bytes the bucket holds before it is sent.
      if (b.bucket.slice * s.group_size * o.element_bytes >= o.gradient_bucket_bytes) {
        done.push_back(std::move(b));
        b = Open{};
      }
    }
  }
  for (auto& [groups, b] : open)
    if (!b.bucket.params.empty()) done.push_back(std::move(b));
  // Sent when their last member is freed: in that order on every rank.
  std::sort(done.begin(), done.end(), [](const Open& a, const Open& b) { return a.last < b.last; });
  for (Open& b : done) {
    for (int i : b.bucket.params)
      p->param_sharding[i].bucket = static_cast<int>(p->scatter_buckets.size());
    p->scatter_buckets.push_back(std::move(b.bucket));
  }
  p->scatter_overlap = o.overlap_gradient_reductions && !p->scatter_buckets.empty();
}

}  // namespace shardscope

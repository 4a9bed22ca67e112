// ExecuteRedistribution: runs a RedistPlan on one rank over a Communicator.
//
// Each rank holds its current shard as a dense row-major float buffer plus the global box it
// covers. Structured steps run as the collective they name on the rank groups of the step
// (GroupAlong splits them off `world`; member i of a group is rank i of the split
// communicator, and holds block i): the data are packed so that the communicator's flat
// blocks are the tensor blocks along the step's dimension. Irregular steps run as one
// AllToAllV on `world` following the plan's transfer list (reduce-scatter-v adds what it
// receives to the rank's own addend). The traffic the communicator counts equals the plan's
// per-rank bytes for 4-byte elements.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/redistribution.h"

namespace shardscope {

namespace {

struct Shard {
  std::vector<int64_t> lo;
  Shape ext;
  std::vector<float> v;
};

std::vector<int64_t> Strides(const Shape& ext) {
  std::vector<int64_t> s(ext.size(), 1);
  for (int d = static_cast<int>(ext.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * ext[d + 1];
  return s;
}

// Copies (or adds) the global box [blo, blo + bext) from `src` (covering box slo/sext) into
// `dst` (covering dlo/dext). Both buffers are row-major over their own boxes.
void CopyBox(const float* src, const std::vector<int64_t>& slo, const Shape& sext, float* dst,
             const std::vector<int64_t>& dlo, const Shape& dext, const std::vector<int64_t>& blo,
             const Shape& bext, bool add) {
  const size_t nd = bext.size();
  if (NumElements(bext) == 0) return;
  if (nd == 0) {
    dst[0] = add ? dst[0] + src[0] : src[0];
    return;
  }
  const std::vector<int64_t> ss = Strides(sext), ds = Strides(dext);
  const int64_t run = bext[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    int64_t so = 0, doff = 0;
    for (size_t d = 0; d < nd; ++d) {
      so += (blo[d] + idx[d] - slo[d]) * ss[d];
      doff += (blo[d] + idx[d] - dlo[d]) * ds[d];
    }
    if (add) {
      for (int64_t k = 0; k < run; ++k) dst[doff + k] += src[so + k];
    } else {
      std::memcpy(dst + doff, src + so, sizeof(float) * run);
    }
    int d = static_cast<int>(nd) - 2;
    while (d >= 0 && ++idx[d] == bext[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}

// The sub-box of `s` with dimension `dim` cut into `parts` chunks, chunk `j`.
std::pair<std::vector<int64_t>, Shape> ChunkBox(const Shard& s, int dim, int64_t parts, int64_t j) {
  std::vector<int64_t> lo = s.lo;
  Shape ext = s.ext;
  ext[dim] /= parts;
  lo[dim] += j * ext[dim];
  return {lo, ext};
}

// Packs the `parts` chunks of `s` along `dim`, chunk j as flat block j.
std::vector<float> PackChunks(const Shard& s, int dim, int64_t parts) {
  std::vector<float> out(s.v.size());
  const int64_t block = static_cast<int64_t>(s.v.size()) / parts;
  for (int64_t j = 0; j < parts; ++j) {
    auto [lo, ext] = ChunkBox(s, dim, parts, j);
    CopyBox(s.v.data(), s.lo, s.ext, out.data() + j * block, lo, ext, lo, ext, false);
  }
  return out;
}

std::string StepName(size_t k, const RedistStep& st) {
  return "redistribution step " + std::to_string(k + 1) + " (" + st.KindName() + ")";
}

class Executor {
 public:
  Executor(const RedistPlan& plan, Communicator& world) : plan_(plan), world_(world) {}

  Status Run(const Tensor& in, Tensor* out) {
    const Layout& from = plan_.from;
    const int n = from.mesh().size();
    if (world_.size() != n) {
      return Status::Invalid("redistribution plan over " + std::to_string(n) +
                             " ranks executed on a communicator of " +
                             std::to_string(world_.size()));
    }
    rank_ = world_.rank();
    if (in.shape() != from.ShardShape()) {
      return Status::Invalid("redistribution input on rank " + std::to_string(rank_) +
                             " has shape " + ShapeToString(in.shape()) + ", expected the shard " +
                             ShapeToString(from.ShardShape()) + " of " + from.ToString());
    }
    if (in.dtype() != DType::kF32) return Status::Invalid("redistribution supports float32 only");
    if (plan_.element_bytes != 4) {
      return Status::Invalid("redistribution plan priced for " +
                             std::to_string(plan_.element_bytes) +
                             "-byte elements executed on float32 data");
    }
    cur_.lo = from.ShardOffsets(rank_);
    cur_.ext = from.ShardShape();
    cur_.v.assign(in.data(), in.data() + in.size());
    for (size_t k = 0; k < plan_.steps.size(); ++k) {
      Status st = Step(plan_.steps[k]);
      if (!st.ok()) return st.WithContext(StepName(k, plan_.steps[k]));
    }
    const Layout& to = plan_.to;
    if (cur_.lo != to.ShardOffsets(rank_) || cur_.ext != to.ShardShape()) {
      return Status::Internal("redistribution ended on rank " + std::to_string(rank_) +
                              " without its target shard");
    }
    *out = Tensor::FromVector(cur_.ext, std::move(cur_.v));
    return Status::Ok();
  }

 private:
  bool IsZero(const RedistStep& st) const {
    return std::find(st.zero_ranks.begin(), st.zero_ranks.end(), rank_) != st.zero_ranks.end();
  }

  // This rank's split communicator for `groups` (cached per group list) and its index.
  Result<Communicator*> Group(const std::vector<std::vector<int>>& groups) {
    auto it = comms_.find(groups);
    if (it == comms_.end()) {
      SHARDSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> c, GroupAlong(world_, groups));
      it = comms_.emplace(groups, std::move(c)).first;
    }
    return it->second.get();
  }

  Status Step(const RedistStep& st) {
    using K = RedistStep::Kind;
    const Layout& after = st.after;
    if (st.irregular()) return Irregular(st);
    switch (st.kind) {
      case K::kLocalSlice: {
        Shard next{after.ShardOffsets(rank_), after.ShardShape(), {}};
        next.v.assign(NumElements(next.ext), 0.0f);
        if (!IsZero(st)) {
          CopyBox(cur_.v.data(), cur_.lo, cur_.ext, next.v.data(), next.lo, next.ext, next.lo,
                  next.ext, false);
        }
        cur_ = std::move(next);
        return Status::Ok();
      }
      case K::kLocalReshape: {
        if (IsZero(st)) {
          cur_.lo = after.ShardOffsets(rank_);
          cur_.ext = after.ShardShape();
          cur_.v.assign(NumElements(cur_.ext), 0.0f);
        }
        return Status::Ok();
      }
      case K::kAllGather: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups));
        const int64_t p = comm->size();
        std::vector<float> flat(cur_.v.size() * p);
        SHARDSCOPE_RETURN_IF_ERROR(comm->AllGather(cur_.v, flat));
        Shard next{after.ShardOffsets(rank_), after.ShardShape(), {}};
        next.v.assign(NumElements(next.ext), 0.0f);
        const int64_t block = static_cast<int64_t>(cur_.v.size());
        for (int64_t i = 0; i < p; ++i) {
          std::vector<int64_t> lo = next.lo;
          lo[st.dim] += i * cur_.ext[st.dim];
          CopyBox(flat.data() + i * block, lo, cur_.ext, next.v.data(), next.lo, next.ext, lo,
                  cur_.ext, false);
        }
        cur_ = std::move(next);
        return Status::Ok();
      }
      case K::kAllToAll: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups));
        const int64_t p = comm->size();
        const int64_t me = comm->rank();
        std::vector<float> send = PackChunks(cur_, st.dim_to, p);
        std::vector<float> recv(send.size());
        SHARDSCOPE_RETURN_IF_ERROR(comm->AllToAll(send, recv));
        Shard next{after.ShardOffsets(rank_), after.ShardShape(), {}};
        next.v.assign(NumElements(next.ext), 0.0f);
        auto [mylo, chunk] = ChunkBox(cur_, st.dim_to, p, me);
        const int64_t block = static_cast<int64_t>(send.size()) / p;
        for (int64_t i = 0; i < p; ++i) {
          std::vector<int64_t> lo = mylo;
          lo[st.dim] = next.lo[st.dim] + i * chunk[st.dim];
          CopyBox(recv.data() + i * block, lo, chunk, next.v.data(), next.lo, next.ext, lo, chunk,
                  false);
        }
        cur_ = std::move(next);
        return Status::Ok();
      }
      case K::kReduceScatter: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups));
        const int64_t p = comm->size();
        std::vector<float> send = PackChunks(cur_, st.dim, p);
        Shard next{after.ShardOffsets(rank_), after.ShardShape(), {}};
        next.v.assign(send.size() / p, 0.0f);
        SHARDSCOPE_RETURN_IF_ERROR(comm->ReduceScatter(send, next.v));
        cur_ = std::move(next);
        return Status::Ok();
      }
      case K::kAllReduce: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups));
        return comm->AllReduce(std::span<float>(cur_.v));
      }
      case K::kPermute:
        break;
    }
    return Status::Internal("unexpected structured step");
  }

  Status Irregular(const RedistStep& st) {
    using K = RedistStep::Kind;
    const int n = world_.size();
    const bool sum = st.kind == K::kReduceScatter || st.kind == K::kAllReduce;
    std::vector<int64_t> send_counts(n, 0), recv_counts(n, 0);
    for (const RedistTransfer& t : st.transfers) {
      if (t.src == rank_) send_counts[t.dst] += NumElements(t.extent);
      if (t.dst == rank_) recv_counts[t.src] += NumElements(t.extent);
    }
    std::vector<int64_t> send_displs(n, 0), recv_displs(n, 0);
    for (int r = 1; r < n; ++r) {
      send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
      recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
    }
    std::vector<float> send(send_displs[n - 1] + send_counts[n - 1]);
    std::vector<float> recv(recv_displs[n - 1] + recv_counts[n - 1]);
    // Pack in transfer order per destination (the receiver unpacks in the same order).
    std::vector<int64_t> at = send_displs;
    for (const RedistTransfer& t : st.transfers) {
      if (t.src != rank_) continue;
      CopyBox(cur_.v.data(), cur_.lo, cur_.ext, send.data() + at[t.dst], t.offset, t.extent,
              t.offset, t.extent, false);
      at[t.dst] += NumElements(t.extent);
    }
    SHARDSCOPE_RETURN_IF_ERROR(
        world_.AllToAllV(send, send_counts, send_displs, recv, recv_counts, recv_displs));
    Shard next{st.after.ShardOffsets(rank_), st.after.ShardShape(), {}};
    next.v.assign(NumElements(next.ext), 0.0f);
    if (!IsZero(st)) {
      // What this rank keeps (its own addend of the whole box, for reduce-scatter-v).
      std::vector<int64_t> klo(next.lo.size());
      Shape kext(next.ext.size());
      bool any = true;
      for (size_t d = 0; d < klo.size(); ++d) {
        klo[d] = std::max(next.lo[d], cur_.lo[d]);
        const int64_t hi = std::min(next.lo[d] + next.ext[d], cur_.lo[d] + cur_.ext[d]);
        kext[d] = hi - klo[d];
        if (kext[d] <= 0) any = false;
      }
      if (any) {
        CopyBox(cur_.v.data(), cur_.lo, cur_.ext, next.v.data(), next.lo, next.ext, klo, kext,
                false);
      }
      std::vector<int64_t> from = recv_displs;
      for (const RedistTransfer& t : st.transfers) {
        if (t.dst != rank_) continue;
        CopyBox(recv.data() + from[t.src], t.offset, t.extent, next.v.data(), next.lo, next.ext,
                t.offset, t.extent, sum);
        from[t.src] += NumElements(t.extent);
      }
    }
    cur_ = std::move(next);
    return Status::Ok();
  }

  const RedistPlan& plan_;
  Communicator& world_;
  int rank_ = 0;
  Shard cur_;
  std::map<std::vector<std::vector<int>>, std::unique_ptr<Communicator>> comms_;
};

}  // namespace

Status ExecuteRedistribution(const RedistPlan& plan, Communicator& world, const Tensor& local_in,
                             Tensor* local_out) {
  if (!local_out) return Status::Invalid("ExecuteRedistribution: local_out is null");
  Executor ex(plan, world);
  return ex.Run(local_in, local_out);
}

}  // namespace shardscope

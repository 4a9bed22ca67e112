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
//
// Memory. The first step reads the input tensor in place and the last one writes straight
// into the output tensor (reusing its storage when it already has the target shard's shape);
// in between, shards alternate between two buffers of the RedistWorkspace, and the packing and
// receive buffers are the workspace's too, so a workspace that is reused allocates nothing
// once it has grown. No buffer is zero-filled when the step overwrites all of it.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/redistribution/redistribution.h"

namespace shardscope {

struct RedistWorkspace::Impl {
  Communicator* world = nullptr;  // the communicator `comms` were split from
  std::map<std::vector<std::vector<int>>, std::unique_ptr<Communicator>> comms;
  std::vector<float> shard[2];  // intermediate shards (ping-pong)
  std::vector<float> send, recv;
  std::vector<int64_t> send_counts, recv_counts, send_displs, recv_displs, at;
  std::vector<double>* step_ends = nullptr;  // set_step_ends: steady-clock seconds per step
};

RedistWorkspace::RedistWorkspace() : impl_(std::make_unique<Impl>()) {}
RedistWorkspace::~RedistWorkspace() = default;
RedistWorkspace::RedistWorkspace(RedistWorkspace&&) noexcept = default;
RedistWorkspace& RedistWorkspace::operator=(RedistWorkspace&&) noexcept = default;
void RedistWorkspace::set_step_ends(std::vector<double>* ends) { impl_->step_ends = ends; }

namespace {

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

// A shard being redistributed: its global box and its data (not owned).
struct ShardView {
  std::vector<int64_t> lo;
  Shape ext;
  float* data = nullptr;  // the input tensor's data is only read
  int64_t size() const { return NumElements(ext); }
};

// The sub-box of `s` with dimension `dim` cut into `parts` chunks, chunk `j`.
std::pair<std::vector<int64_t>, Shape> ChunkBox(const ShardView& s, int dim, int64_t parts,
                                                int64_t j) {
  std::vector<int64_t> lo = s.lo;
  Shape ext = s.ext;
  ext[dim] /= parts;
  lo[dim] += j * ext[dim];
  return {lo, ext};
}

// Packs the `parts` chunks of `s` along `dim` into `out`, chunk j as flat block j.
void PackChunks(const ShardView& s, int dim, int64_t parts, std::vector<float>* out) {
  out->resize(s.size());
  const int64_t block = s.size() / parts;
  for (int64_t j = 0; j < parts; ++j) {
    auto [lo, ext] = ChunkBox(s, dim, parts, j);
    CopyBox(s.data, s.lo, s.ext, out->data() + j * block, lo, ext, lo, ext, false);
  }
}

std::string StepName(size_t k, const RedistStep& st) {
  return "redistribution step " + std::to_string(k + 1) + " (" + st.KindName() + ")";
}

class Executor {
 public:
  Executor(const RedistPlan& plan, Communicator& world, RedistWorkspace::Impl& ws)
      : plan_(plan), world_(world), ws_(ws) {
    if (ws_.world != &world_) {
      ws_.comms.clear();
      ws_.world = &world_;
    }
  }

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
    const Layout& to = plan_.to;
    // The last step writes into `out`: into its storage when it has the target's shape (and
    // is not the input), else into a fresh tensor.
    const Shape target_shape = to.ShardShape();
    if (out == &in || out->dtype() != DType::kF32 || out->shape() != target_shape ||
        out->size() != NumElements(target_shape)) {  // a default Tensor has shape {} and no data
      fresh_out_ = Tensor(target_shape);
      out_ = &fresh_out_;
    } else {
      out_ = out;
    }
    cur_.lo = from.ShardOffsets(rank_);
    cur_.ext = from.ShardShape();
    cur_.data = const_cast<float*>(in.data());  // read only until a step owns the shard
    cur_buffer_ = kInput;
    for (size_t k = 0; k < plan_.steps.size(); ++k) {
      last_ = k + 1 == plan_.steps.size();
      Status st = Step(plan_.steps[k]);
      if (!st.ok()) return st.WithContext(StepName(k, plan_.steps[k]));
      if (ws_.step_ends != nullptr) {
        ws_.step_ends->push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                .count());
      }
    }
    if (cur_.lo != to.ShardOffsets(rank_) || cur_.ext != target_shape) {
      return Status::Internal("redistribution ended on rank " + std::to_string(rank_) +
                              " without its target shard");
    }
    if (cur_buffer_ != kOutput) {  // no step, or the last one left the shard where it was
      std::memcpy(out_->data(), cur_.data, sizeof(float) * cur_.size());
    }
    if (out_ == &fresh_out_) *out = std::move(fresh_out_);
    return Status::Ok();
  }

 private:
  static constexpr int kInput = -1, kOutput = 2;

  bool IsZero(const RedistStep& st) const {
    return std::find(st.zero_ranks.begin(), st.zero_ranks.end(), rank_) != st.zero_ranks.end();
  }

  // This rank's split communicator for `groups` (cached in the workspace) and its index.
  Result<Communicator*> Group(const std::vector<std::vector<int>>& groups) {
    auto it = ws_.comms.find(groups);
    if (it == ws_.comms.end()) {
      SHARDSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> c, GroupAlong(world_, groups));
      it = ws_.comms.emplace(groups, std::move(c)).first;
    }
    return it->second.get();
  }

  // The shard after step `st`, with storage for it: the output tensor for the last step,
  // otherwise the workspace buffer the current shard is not in. Contents are unspecified.
  ShardView Next(const Layout& after) {
    ShardView next{after.ShardOffsets(rank_), after.ShardShape(), nullptr};
    if (last_) {
      next.data = out_->data();
      next_buffer_ = kOutput;
    } else {
      next_buffer_ = cur_buffer_ == 0 ? 1 : 0;
      std::vector<float>& buf = ws_.shard[next_buffer_];
      buf.resize(std::max<size_t>(buf.size(), static_cast<size_t>(next.size())));
      next.data = buf.data();
    }
    return next;
  }
  void Advance(ShardView next) {
    cur_ = std::move(next);
    cur_buffer_ = next_buffer_;
  }
  Status Step(const RedistStep& st) {
    using K = RedistStep::Kind;
    const Layout& after = st.after;
    if (st.irregular()) return Irregular(st);
    switch (st.kind) {
      case K::kLocalSlice: {
        ShardView next = Next(after);
        if (IsZero(st)) {
          std::fill(next.data, next.data + next.size(), 0.0f);
        } else {
          CopyBox(cur_.data, cur_.lo, cur_.ext, next.data, next.lo, next.ext, next.lo, next.ext,
                  false);
        }
        Advance(std::move(next));
        return Status::Ok();
      }
      case K::kLocalReshape: {
        if (IsZero(st)) {
          ShardView next = Next(after);
          std::fill(next.data, next.data + next.size(), 0.0f);
          Advance(std::move(next));
        }
        return Status::Ok();
      }
      case K::kAllGather: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups.list()));
        const int64_t p = comm->size();
        const int64_t block = cur_.size();
        ShardView next = Next(after);
        if (st.dim == 0) {
          // Blocks along the leading dimension are contiguous: gather in place.
          SHARDSCOPE_RETURN_IF_ERROR(comm->AllGather(std::span<const float>(cur_.data, block),
                                                     std::span<float>(next.data, block * p)));
        } else {
          ws_.recv.resize(block * p);
          SHARDSCOPE_RETURN_IF_ERROR(
              comm->AllGather(std::span<const float>(cur_.data, block), ws_.recv));
          for (int64_t i = 0; i < p; ++i) {
            std::vector<int64_t> lo = next.lo;
            lo[st.dim] += i * cur_.ext[st.dim];
            CopyBox(ws_.recv.data() + i * block, lo, cur_.ext, next.data, next.lo, next.ext, lo,
                    cur_.ext, false);
          }
        }
        Advance(std::move(next));
        return Status::Ok();
      }
      case K::kAllToAll: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups.list()));
        const int64_t p = comm->size();
        const int64_t me = comm->rank();
        PackChunks(cur_, st.dim_to, p, &ws_.send);
        ws_.recv.resize(ws_.send.size());
        SHARDSCOPE_RETURN_IF_ERROR(comm->AllToAll(ws_.send, ws_.recv));
        ShardView next = Next(after);
        auto [mylo, chunk] = ChunkBox(cur_, st.dim_to, p, me);
        const int64_t block = static_cast<int64_t>(ws_.send.size()) / p;
        for (int64_t i = 0; i < p; ++i) {
          std::vector<int64_t> lo = mylo;
          lo[st.dim] = next.lo[st.dim] + i * chunk[st.dim];
          CopyBox(ws_.recv.data() + i * block, lo, chunk, next.data, next.lo, next.ext, lo, chunk,
                  false);
        }
        Advance(std::move(next));
        return Status::Ok();
      }
      case K::kReduceScatter: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups.list()));
        const int64_t p = comm->size();
        PackChunks(cur_, st.dim, p, &ws_.send);
        ShardView next = Next(after);
        SHARDSCOPE_RETURN_IF_ERROR(comm->ReduceScatter(
            ws_.send, std::span<float>(next.data, static_cast<size_t>(ws_.send.size() / p))));
        Advance(std::move(next));
        return Status::Ok();
      }
      case K::kAllReduce: {
        SHARDSCOPE_ASSIGN_OR_RETURN(Communicator * comm, Group(st.groups.list()));
        const std::span<const float> in(cur_.data, cur_.size());
        if (last_ || cur_buffer_ == kInput) {
          // Reduce into fresh storage rather than copying first.
          ShardView next = Next(after);
          SHARDSCOPE_RETURN_IF_ERROR(comm->AllReduce(in, std::span<float>(next.data, cur_.size())));
          Advance(std::move(next));
          return Status::Ok();
        }
        return comm->AllReduce(std::span<float>(cur_.data, cur_.size()));
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
    std::vector<int64_t>& send_counts = ws_.send_counts;
    std::vector<int64_t>& recv_counts = ws_.recv_counts;
    send_counts.assign(n, 0);
    recv_counts.assign(n, 0);
    for (const RedistTransfer& t : st.transfers) {
      if (t.src == rank_) send_counts[t.dst] += NumElements(t.extent);
      if (t.dst == rank_) recv_counts[t.src] += NumElements(t.extent);
    }
    std::vector<int64_t>& send_displs = ws_.send_displs;
    std::vector<int64_t>& recv_displs = ws_.recv_displs;
    send_displs.assign(n, 0);
    recv_displs.assign(n, 0);
    for (int r = 1; r < n; ++r) {
      send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
      recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
    }
    ws_.send.resize(send_displs[n - 1] + send_counts[n - 1]);
    ws_.recv.resize(recv_displs[n - 1] + recv_counts[n - 1]);
    // Pack in transfer order per destination (the receiver unpacks in the same order).
    ws_.at = send_displs;
    for (const RedistTransfer& t : st.transfers) {
      if (t.src != rank_) continue;
      CopyBox(cur_.data, cur_.lo, cur_.ext, ws_.send.data() + ws_.at[t.dst], t.offset, t.extent,
              t.offset, t.extent, false);
      ws_.at[t.dst] += NumElements(t.extent);
    }
    SHARDSCOPE_RETURN_IF_ERROR(
        world_.AllToAllV(ws_.send, send_counts, send_displs, ws_.recv, recv_counts, recv_displs));
    ShardView next = Next(st.after);
    if (IsZero(st)) {
      std::fill(next.data, next.data + next.size(), 0.0f);
      Advance(std::move(next));
      return Status::Ok();
    }
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
    const int64_t kept = any ? NumElements(kext) : 0;
    // Zero-fill only what neither the kept box nor (for a plain exchange, whose pieces are
    // disjoint) the received pieces cover.
    int64_t received = 0;
    for (int r = 0; r < n; ++r) received += recv_counts[r];
    if (sum ? kept != next.size() : kept + received != next.size()) {
      std::fill(next.data, next.data + next.size(), 0.0f);
    }
    if (any) {
      CopyBox(cur_.data, cur_.lo, cur_.ext, next.data, next.lo, next.ext, klo, kext, false);
    }
    ws_.at = recv_displs;
    for (const RedistTransfer& t : st.transfers) {
      if (t.dst != rank_) continue;
      CopyBox(ws_.recv.data() + ws_.at[t.src], t.offset, t.extent, next.data, next.lo, next.ext,
              t.offset, t.extent, sum);
      ws_.at[t.src] += NumElements(t.extent);
    }
    Advance(std::move(next));
    return Status::Ok();
  }

  const RedistPlan& plan_;
  Communicator& world_;
  RedistWorkspace::Impl& ws_;
  int rank_ = 0;
  bool last_ = false;
  ShardView cur_;
  int cur_buffer_ = kInput;  // kInput, 0 or 1 (ws_.shard), kOutput
  int next_buffer_ = kInput;
  Tensor* out_ = nullptr;
  Tensor fresh_out_;
};

}  // namespace

Status ExecuteRedistribution(const RedistPlan& plan, Communicator& world, const Tensor& local_in,
                             Tensor* local_out, RedistWorkspace* workspace) {
  if (!local_out) return Status::Invalid("ExecuteRedistribution: local_out is null");
  if (!workspace) {
    RedistWorkspace scratch;
    return ExecuteRedistribution(plan, world, local_in, local_out, &scratch);
  }
  Executor ex(plan, world, workspace->impl());
  return ex.Run(local_in, local_out);
}

}  // namespace shardscope

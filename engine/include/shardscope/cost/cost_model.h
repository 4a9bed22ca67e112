// CostModel: the one function that prices computation and communication (DESIGN.md §2).
//
// Used by the redistribution planner and by every search, so that all of them judge plans
// and strategies by the same numbers. Communication is the alpha-beta model with ring
// formulas: a collective over a group of p ranks on a buffer of n bytes costs
//
//   all-gather      (p-1) alpha +   (p-1)/p n / beta     n = gathered (output) bytes per rank
//   reduce-scatter  (p-1) alpha +   (p-1)/p n / beta     n = input bytes per rank
//   all-reduce    2 (p-1) alpha + 2 (p-1)/p n / beta     n = bytes per rank
//   all-to-all      (p-1) alpha +   (p-1)/p n / beta     n = bytes per rank (in = out)
//   permute               alpha +           n / beta     n = bytes each rank sends/receives
//   all-reduce (tree) 2 ceil(log2 p) alpha + 2 n / beta  (with tree_all_reduce: the cheaper)
//
// In every formula the bandwidth term is (bytes one rank receives) / beta and the latency
// term is alpha times the number of messages a rank receives in sequence, so an irregular
// exchange (an all-to-all-v in which each rank receives from k peers, b bytes in all) is
// priced consistently as k alpha + b / beta (ExchangeSeconds).
//
// beta depends on the mesh axes a collective spans: each axis has a bandwidth (by axis
// name; default_bandwidth otherwise) and a group spanning several axes runs at the slowest
// of them. Calibration (`shardscope calibrate`) fills these numbers from measurements; until
// then the defaults below apply.
//
// Properties the tests check: every price is >= 0, monotone in bytes and group size, zero
// for nothing; and the planner built on it obeys the triangle inequality on layouts (see
// redistribution.h for the exact statement).
//
// A CostModel is a plain value; const methods are thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/layout/mesh.h"
#include "shardscope/status.h"

namespace shardscope {

enum class CollectiveKind { kAllGather, kReduceScatter, kAllReduce, kAllToAll, kPermute };
// "all-gather", "reduce-scatter", "all-reduce", "all-to-all", "permute".
const char* CollectiveKindName(CollectiveKind kind);

// The engine's GEMM rate by shape (`shardscope calibrate` measures its MatMul kernel): small
// GEMMs run far below the large-shape rate (the kernel computes C in tiles of 12 rows x 32
// columns, mostly idle for a GEMM of 4 rows). Modelled as separable: the rate at
// base x base x base times, per dimension, the rate with that dimension changed (the other
// two at base) over the base rate; piecewise linear in log2 of the dimension between
// measured points, constant beyond the first and the last.
struct GemmRateTable {
  int64_t base = 256;
  double base_flops = 0;  // flop/s at base^3; 0 = no table
  // (dimension, flop/s) ascending by dimension: output rows, contraction depth, output columns.
  std::vector<std::pair<int64_t, double>> rows, depth, cols;

  bool empty() const { return base_flops <= 0; }
  // Flop/s of out[rows, cols] = a[rows, depth] . b[depth, cols] (each >= 1).
  double Flops(double rows, double depth, double cols) const;
};

// The optional in-process overhead: what device threads sharing few cores (`train` on
// in-process devices, this machine) pay on top of the portable model. Calibration measures
// it; cluster profiles leave it empty, so `plan --cluster` prices with the portable core.
struct InProcessOverhead {
  // Devices that can compute at the same time (cores available to in-process device
  // threads); 0 = every device has its own. With N devices on fewer slots their computation
  // is serialised, so the searches multiply operator time by ComputeSlowdown(N). Calibrate
  // measures it (N threads of GEMM against one); the planner's prices and Fingerprint
  // ignore it.
  double compute_slots = 0;
  // What one collective or exchange costs on top of the above when the ranks arrive from
  // computation (device threads sharing cores must each be scheduled again), seconds.
  // Searches only, like collective_overhead_s; calibrate measures it.
  double collective_handoff_s = 0;
  // In-process devices sharing fewer cores: what a collective costs on top when the ranks
  // arrive from a long phase of computation (calibrate: after GEMMs of 256^3 on every
  // device), seconds. A phase between two collectives starts on one core: the device threads
  // that the collective woke queue where they were woken, and the other cores take them over
  // only after a while. Until then the
  // phase runs one device after another, which its price at compute_slots does not count;
  // after that it runs at compute_slots. So a short phase costs what it costs on one core and
  // a long one this much more than its price. 0 (older profiles, MPI) = the hand-off is at
  // most collective_handoff_s and the computation before. Searches only.
  double long_phase_handoff_s = 0;
  // In-process devices: the least one collective or exchange costs, whatever its group,
  // because every device thread takes part (the groups of one redistribution step run at
  // once on shared cores, and each thread must be scheduled to post and to finish), seconds.
  // Calibrate measures it in-process as the all-reduce of 4 bytes on all devices; 0 (MPI,
  // defaults) = the formulas' latency terms alone. Searches only, like collective_handoff_s.
  double group_sync_s = 0;
  // In-process devices: the same for a step whose groups are pairs (a 4-byte all-reduce in
  // pairs, every device at once: devices / 2 groups side by side), seconds. A structured
  // step runs on its groups' own communicators, so each device thread waits only for the
  // members of its group. 0 (older profiles, MPI) = every group pays group_sync_s.
  // PriceProgram only (GroupSyncSeconds); the searches' floor stays group_sync_s.
  double pair_sync_s = 0;
  // In-process devices: the same for a step whose groups are half of the devices each (two
  // groups side by side; groups of 4 of 8), seconds: nearer the sync of all devices than a line
  // in the group size from the pair sync gives (at each barrier 6 of 8 threads wait to be
  // woken, 7 on all 8, 4 in pairs). 0 (older profiles, fewer than 6
  // devices) = the line from pair_sync_s to group_sync_s. PriceProgram only, like pair_sync_s.
  double half_sync_s = 0;

  bool empty() const {
    return compute_slots <= 0 && collective_handoff_s <= 0 && long_phase_handoff_s <= 0 &&
           group_sync_s <= 0 && pair_sync_s <= 0 && half_sync_s <= 0;
  }
  // How much slower each of `devices` concurrent devices computes than one alone:
  // max(1, devices / compute_slots), 1 when compute_slots is 0.
  double ComputeSlowdown(int devices) const {
    return compute_slots > 0 ? std::max(1.0, devices / compute_slots) : 1.0;
  }
  // The least a collective step costs in-process whose groups have `group_size` members, every
  // one of `devices` devices taking part (its groups side by side): pair_sync_s for pairs,
  // half_sync_s for two halves, group_sync_s for one group of every device, in between linear
  // in the group size from one measured size to the next. group_sync_s without pair_sync_s.
  double GroupSyncSeconds(int64_t group_size, int64_t devices) const;
  // The hand-off a collective pays when the ranks arrive from `compute_before` seconds of
  // computation: at most MaxHandoffSeconds (a collective that follows another, or a short
  // operator, finds the device threads still scheduled).
  double HandoffSeconds(double compute_before) const {
    return std::clamp(compute_before, 0.0, MaxHandoffSeconds());
  }
  // The most any hand-off costs: long_phase_handoff_s when measured, else collective_handoff_s.
  double MaxHandoffSeconds() const {
    return long_phase_handoff_s > 0 ? long_phase_handoff_s : collective_handoff_s;
  }
};

// The per-hop latency of one group's collective. NCCL's tuner (src/graph/tuning.cc) prices the
// hops inside a node at the node link's latency and only those between nodes at the network's:
// `outer` for those (the slowest link the group spans; < 0: CostModel::latency_s), `inner` for
// the hops among the `per_node` ranks the group has in each node, when that link is faster.
struct HopLatency {
  double outer = -1, inner = -1;
  int64_t per_node = 1;
  HopLatency(double outer_s = -1) : outer(outer_s) {}  // NOLINT(runtime/explicit): one figure
  HopLatency(double outer_s, double inner_s, int64_t ranks_per_node)
      : outer(outer_s), inner(inner_s), per_node(ranks_per_node) {}
  // Whether the group's hops inside a node are cheaper than those between nodes.
  bool Blended() const { return per_node > 1 && inner >= 0 && inner < outer; }
};

// The portable alpha-beta model (what holds on any cluster) plus the optional in-process term.
struct CostModel {
  // Per-message latency (alpha), seconds.
  double latency_s = 5e-6;
  // Link bandwidth (beta) of a mesh axis without an entry in axis_bandwidth, bytes/s.
  double default_bandwidth = 10e9;
  // Bandwidth per mesh axis name, bytes/s (e.g. {"dp", 12.5e9}, {"mp", 150e9}). A name that
  // is not found is looked up again without a trailing "_<digits>" (the sub-axes a mesh
  // unification creates, "dp_0", "dp_1", inherit the bandwidth of "dp").
  std::map<std::string, double> axis_bandwidth;
  // Per-message latency per mesh axis name, seconds (e.g. {"node", 20e-6}); latency_s for an
  // axis without an entry ("dp_0" falls back to "dp" as for axis_bandwidth). Searches only:
  // a collective over a group spanning several axes waits for the slowest of them. The
  // planner's prices and Fingerprint use latency_s alone.
  std::map<std::string, double> axis_latency;
  // Sustained compute rate per device, flop/s.
  double flops = 50e9;
  // Local memory bandwidth (copies, slicing), bytes/s. Local steps are not priced by the
  // planner (they are free next to communication), but searches may use it.
  double memory_bandwidth = 20e9;
  // Fixed cost of issuing one collective or exchange (launch, synchronisation), seconds.
  // Only the searches count it (fewer, larger collectives beat many small ones); the
  // planner's prices above do not include it.
  double collective_overhead_s = 20e-6;
  // All-reduce at the cheaper of the ring and the double binary tree (NCCL's two algorithms):
  // the tree costs 2 ceil(log2 p) alpha + 2 n / beta, fewer latency terms on large groups.
  // Cluster profiles set it; false (in-process, calibrated profiles) = the ring alone.
  bool tree_all_reduce = false;
  // Rings and trees over several mesh axes use every link the group has into an axis at once:
  // a group with L ranks in each node crosses the network on L NICs (NCCL runs a channel per
  // NIC), so that axis runs at L x its bandwidth, bounded by the inner axes' links. Searches
  // and PriceProgram; cluster profiles set it; false: the slowest link alone.
  bool hierarchical_collectives = false;
  // Parameter gradients are all-reduced in buckets of this many bytes (PyTorch DDP's
  // bucket_cap_mb, 25 MiB): a gradient pays its share of one bucket's latency terms
  // (GradientBucketShare). 0 = one collective per gradient. Searches and PriceProgram.
  double gradient_bucket_bytes = 0;
  // Parameter gradients' reductions overlap the backward (DDP and Megatron launch a bucket's
  // all-reduce when it is ready): the step pays what runs past the backward's end
  // (gradient_overlap.h). Cluster profiles set it; false (in-process: `train` reduces after
  // the backward) = their sum. Searches' Total and PriceProgram.
  bool overlap_gradients = false;
  // The optional in-process term (device threads sharing a few cores); zero = none. Only
  // the searches and PriceProgram read it, to predict in-process runs on this machine.
  InProcessOverhead in_process;

  // GEMM rate by shape, searches only (MatMul and BatchMatMul are priced per shard shape);
  // empty (defaults, old profiles) = every GEMM at `flops`. Fingerprint ignores it.
  GemmRateTable gemm_rates;
  // The convolutions' rate by the shape of their GEMM, searches only: Conv2D and its
  // gradients copy im2col columns and run an Eigen GEMM per image (not the MatMul kernel of
  // gemm_rates), out[O, pixels] = w[O, C kh kw] . cols[C kh kw, pixels]; calibrate measures
  // the Conv2D kernel, im2col included, as flop/s of that GEMM. Empty (defaults, older
  // profiles) = convolutions at `flops`, as before.
  GemmRateTable conv_gemm_rates;
  // Measured rates of memory-bound kernels the flop count misprices, searches only: operator
  // name (OpName: "MaxPool2D") -> bytes of its input per second that its forward and its
  // gradient operator (MaxPool2DGrad, which finds each window's maximum again) process
  // together; calibrate measures them. A kind without an entry (defaults, older profiles) is
  // priced as before (OperatorSeconds). Fingerprint ignores it.
  std::map<std::string, double> kernel_rates;
  // kernel_rates' entry for `op_name`, 0 without one.
  double KernelRate(const std::string& op_name) const {
    const auto it = kernel_rates.find(op_name);
    return it == kernel_rates.end() ? 0.0 : it->second;
  }

  // Bandwidth of one axis by name (see axis_bandwidth).
  double AxisBandwidth(const std::string& axis_name) const;
  // Latency of one axis by name (see axis_latency).
  double AxisLatency(const std::string& axis_name) const;
  // Sequential messages one rank receives in a collective of `kind` on `group_size` ranks
  // (the latency terms of the formulas above: p-1, 2(p-1) for all-reduce, 1 for permute).
  static double LatencyMessages(CollectiveKind kind, int64_t group_size);
  // The latency terms of a collective on `group_size` ranks over `hops` (outer < 0: latency_s),
  // the ring's or, with `tree`, the all-reduce's double binary tree. An all-reduce as NCCL's
  // tuner prices it (src/graph/tuning.cc): the ring's 2 x nodes steps between nodes at `outer`,
  // its other steps at `inner`; the tree 2 ((L - 1) inner + ceil(log2 nodes) outer), L ranks per
  // node. Other kinds, and unblended hops: LatencyMessages x outer (the tree 2 ceil(log2 p) x
  // outer): the searches price gathers and scatters by the edges' formula, not the planner's.
  double LatencySeconds(CollectiveKind kind, int64_t group_size, const HopLatency& hops,
                        bool tree) const;
  // Bandwidth of a group spanning `axes` of `mesh`: the minimum over the axes (the slowest
  // link); default_bandwidth when `axes` is empty.
  double Bandwidth(const DeviceMesh& mesh, const std::vector<int>& axes) const;
  // The fastest bandwidth of any axis of `mesh` (default_bandwidth if it has none); used as
  // an optimistic bound.
  double MaxBandwidth(const DeviceMesh& mesh) const;

  // Double binary tree all-reduce: 2 ceil(log2 p) alpha + 2 bytes / bandwidth (p > 1).
  double TreeAllReduceSeconds(double bytes, int64_t group_size, double bandwidth) const;
  // Ring formulas above. `bytes` as defined per kind, `group_size` p >= 1 (p = 1 costs 0),
  // `bandwidth` in bytes/s.
  double CollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                           double bandwidth) const;
  // CollectiveSeconds with the bandwidth of `axes` of `mesh`.
  double CollectiveSeconds(CollectiveKind kind, double bytes, const DeviceMesh& mesh,
                           const std::vector<int>& axes) const;
  // An irregular exchange: `messages` sequential receives, `bytes_received` bytes in all by
  // the busiest rank. 0 when both are 0.
  double ExchangeSeconds(int64_t messages, double bytes_received, double bandwidth) const;
  // Local computation of `flop` floating-point operations.
  double ComputeSeconds(double flop) const { return flop > 0 ? flop / flops : 0.0; }
  // One GEMM out[rows, cols] = a[rows, depth] . b[depth, cols] at the rate of its shape
  // (gemm_rates; `flops` without a table). 0 when any dimension is 0.
  double GemmSeconds(double rows, double depth, double cols) const;
  // One GEMM of a convolution at the rate of its shape (conv_gemm_rates; `flops` without).
  double ConvGemmSeconds(double rows, double depth, double cols) const;
  // Local memory traffic of `bytes`.
  double MemorySeconds(double bytes) const { return bytes > 0 ? bytes / memory_bandwidth : 0.0; }

  // One operator's local work: `flop` operations touching `bytes` of operands, limited by
  // whichever of compute rate and memory bandwidth is slower.
  double OperatorSeconds(double flop, double bytes) const {
    return std::max(ComputeSeconds(flop), MemorySeconds(bytes));
  }
  // Training memory of a device holding `parameter_bytes` of parameter shards (each with a
  // gradient and `optimizer_states` state tensors) and `activation_bytes` of saved outputs.
  static double TrainingMemoryBytes(double parameter_bytes, int optimizer_states,
                                    double activation_bytes) {
    return parameter_bytes * (2 + optimizer_states) + activation_bytes;
  }
  // A collective as the searches price it: CollectiveSeconds with its latency terms and
  // collective_overhead_s raised together to at least group_sync_s (a whole 4-byte
  // collective: its overhead is inside it), plus collective_handoff_s (0 when it costs
  // nothing). `latency` < 0: latency_s.
  double SearchCollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                 double bandwidth, const HopLatency& latency = {}) const;
  // Its latency and bandwidth terms: the ring's, or the tree's when cheaper (tree_all_reduce).
  struct CollectiveTerms {
    double latency = 0, transfer = 0;
  };
  CollectiveTerms SearchCollectiveTerms(CollectiveKind kind, double bytes, int64_t group_size,
                                        double bandwidth, const HopLatency& latency) const;
  double SearchCollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size) const {
    return SearchCollectiveSeconds(kind, bytes, group_size, default_bandwidth);
  }
  // An irregular exchange as the searches price it, done in `steps` collective steps (the
  // planner gathers one tensor dimension per step): ExchangeSeconds with its latency and
  // steps x collective_overhead_s raised together to at least steps x group_sync_s, plus
  // steps x collective_handoff_s (0 when nothing moves).
  double SearchExchangeSeconds(int64_t messages, double bytes_received, double bandwidth,
                               int steps = 1, const HopLatency& latency = {}) const;

  // SearchCollectiveSeconds for ranks arriving from `compute_before` seconds of computation:
  // the hand-off is in_process.HandoffSeconds(compute_before). Infinite = SearchCollectiveSeconds.
  double SearchCollectiveAfterSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                      double bandwidth, const HopLatency& latency,
                                      double compute_before) const;
  // SearchExchangeSeconds for ranks arriving from `compute_before` seconds of computation: its
  // first step pays in_process.HandoffSeconds(compute_before), the others follow the step before
  // them and pay none.
  double SearchExchangeAfterSeconds(int64_t messages, double bytes_received, double bandwidth,
                                    int steps, const HopLatency& latency,
                                    double compute_before) const;

  // Hash of every parameter (plan caches key on it).
  // The share of one bucket's collective that a gradient of `bytes` pays: bytes over the
  // bucket (it rides with others), 1 at or above it or without buckets. Collective costs are
  // affine in bytes, so share x price(bucket bytes) = transfer + share x latency terms.
  double GradientBucketShare(double bytes) const {
    return gradient_bucket_bytes > bytes && bytes > 0 ? bytes / gradient_bucket_bytes : 1.0;
  }

  size_t Fingerprint() const;
  // "alpha=5us beta=10GB/s (mp=150GB/s) flops=50GF/s".
  std::string ToString() const;
};

// Profiles (`shardscope calibrate --out FILE`, read by `plan`/`train --profile FILE`): a JSON
// object whose fields are listed once in cost/profile_fields.h (CostProfileFields); missing
// fields keep the defaults above, unknown fields are refused (a typo would keep a default).
// Implemented in src/cost/profile_fields.cc.
Result<CostModel> CostModelFromJson(const std::string& json_text, const std::string& where);
Result<CostModel> LoadCostModel(const std::string& path);
std::string CostModelToJson(const CostModel& model);

}  // namespace shardscope

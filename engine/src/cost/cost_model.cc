#include "shardscope/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "shardscope/base/hash.h"

namespace shardscope {

namespace {

std::string Rate(double v, const char* unit) {
  char buf[64];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof buf, "%g G%s", v / 1e9, unit);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%g M%s", v / 1e6, unit);
  } else {
    std::snprintf(buf, sizeof buf, "%g %s", v, unit);
  }
  return buf;
}

// "dp_0" -> "dp" (sub-axes made by mesh unification); empty when there is no such suffix.
std::string BaseAxisName(const std::string& axis_name) {
  const size_t us = axis_name.rfind('_');
  if (us != std::string::npos && us + 1 < axis_name.size() &&
      std::all_of(axis_name.begin() + us + 1, axis_name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    return axis_name.substr(0, us);
  }
  return "";
}

// Rate at `dim` relative to `base_flops` from one axis of a GemmRateTable (1 when empty).
double AxisEfficiency(const std::vector<std::pair<int64_t, double>>& points, double base_flops,
                      double dim) {
  if (points.empty()) return 1.0;
  if (dim <= static_cast<double>(points.front().first)) return points.front().second / base_flops;
  for (size_t i = 1; i < points.size(); ++i) {
    const double hi = static_cast<double>(points[i].first);
    if (dim > hi) continue;
    const double lo = static_cast<double>(points[i - 1].first);
    const double t = std::log2(dim / lo) / std::log2(hi / lo);
    return ((1 - t) * points[i - 1].second + t * points[i].second) / base_flops;
  }
  return points.back().second / base_flops;
}

}  // namespace

double GemmRateTable::Flops(double r, double d, double c) const {
  return base_flops * AxisEfficiency(rows, base_flops, r) * AxisEfficiency(depth, base_flops, d) *
         AxisEfficiency(cols, base_flops, c);
}

double CostModel::GemmSeconds(double rows, double depth, double cols) const {
  const double flop = 2 * rows * depth * cols;
  if (flop <= 0) return 0.0;
  return flop / (gemm_rates.empty() ? flops : gemm_rates.Flops(rows, depth, cols));
}

double CostModel::ConvGemmSeconds(double rows, double depth, double cols) const {
  const double flop = 2 * rows * depth * cols;
  if (flop <= 0) return 0.0;
  return flop / (conv_gemm_rates.empty() ? flops : conv_gemm_rates.Flops(rows, depth, cols));
}

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kPermute:
      return "permute";
  }
  return "?";
}

double CostModel::AxisBandwidth(const std::string& axis_name) const {
  if (axis_bandwidth.empty()) return default_bandwidth;  // the common case: no per-axis figures
  auto it = axis_bandwidth.find(axis_name);
  if (it != axis_bandwidth.end()) return it->second;
  const std::string base = BaseAxisName(axis_name);
  return base.empty() ? default_bandwidth : AxisBandwidth(base);
}

double CostModel::AxisLatency(const std::string& axis_name) const {
  if (axis_latency.empty()) return latency_s;
  auto it = axis_latency.find(axis_name);
  if (it != axis_latency.end()) return it->second;
  const std::string base = BaseAxisName(axis_name);
  return base.empty() ? latency_s : AxisLatency(base);
}

double CostModel::LatencyMessages(CollectiveKind kind, int64_t group_size) {
  if (group_size <= 1) return 0.0;
  const double p = static_cast<double>(group_size);
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return p - 1;
    case CollectiveKind::kAllReduce:
      return 2 * (p - 1);
    case CollectiveKind::kPermute:
      return 1;
  }
  return 0.0;
}

double CostModel::Bandwidth(const DeviceMesh& mesh, const std::vector<int>& axes) const {
  if (axes.empty()) return default_bandwidth;
  double bw = -1;
  for (int a : axes) {
    const double b = AxisBandwidth(mesh.axis_name(a));
    bw = bw < 0 ? b : std::min(bw, b);
  }
  return bw;
}

double CostModel::MaxBandwidth(const DeviceMesh& mesh) const {
  double bw = default_bandwidth;
  for (int a = 0; a < mesh.num_axes(); ++a) bw = std::max(bw, AxisBandwidth(mesh.axis_name(a)));
  return bw;
}

double CostModel::CollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                    double bandwidth) const {
  if (group_size <= 1) return 0.0;
  const double p = static_cast<double>(group_size);
  const double share = (p - 1) / p * std::max(0.0, bytes) / bandwidth;
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (p - 1) * latency_s + share;
    case CollectiveKind::kAllReduce: {
      const double ring = 2 * (p - 1) * latency_s + 2 * share;
      return tree_all_reduce ? std::min(ring, TreeAllReduceSeconds(bytes, group_size, bandwidth))
                             : ring;
    }
    case CollectiveKind::kPermute:
      return latency_s + std::max(0.0, bytes) / bandwidth;
  }
  return 0.0;
}

double CostModel::TreeAllReduceSeconds(double bytes, int64_t group_size, double bandwidth) const {
  if (group_size <= 1) return 0.0;
  // Reduce up and broadcast down a tree of depth ceil(log2 p), pipelined in chunks; two trees
  // (each rank a leaf in one) carry half the data each, so every link moves n once per phase.
  const double depth = std::ceil(std::log2(static_cast<double>(group_size)));
  return 2 * depth * latency_s + 2 * std::max(0.0, bytes) / bandwidth;
}

double CostModel::CollectiveSeconds(CollectiveKind kind, double bytes, const DeviceMesh& mesh,
                                    const std::vector<int>& axes) const {
  return CollectiveSeconds(kind, bytes, mesh.GroupSize(axes), Bandwidth(mesh, axes));
}

double CostModel::ExchangeSeconds(int64_t messages, double bytes_received, double bandwidth) const {
  return static_cast<double>(std::max<int64_t>(0, messages)) * latency_s +
         std::max(0.0, bytes_received) / bandwidth;
}

double CostModel::LatencySeconds(CollectiveKind kind, int64_t group_size, const HopLatency& hops,
                                 bool tree) const {
  if (group_size <= 1) return 0.0;
  const double p = static_cast<double>(group_size);
  const double outer = hops.outer < 0 ? latency_s : hops.outer;
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  if (!hops.Blended() || !all_reduce) {
    if (tree && all_reduce) return 2 * std::ceil(std::log2(p)) * outer;
    return LatencyMessages(kind, group_size) * outer;
  }
  const double per_node = std::min(p, static_cast<double>(hops.per_node));
  const double nodes = std::ceil(p / per_node);
  if (tree) return 2 * ((per_node - 1) * hops.inner + std::ceil(std::log2(nodes)) * outer);
  const double steps = LatencyMessages(kind, group_size);
  const double between = nodes <= 1 ? 0.0 : std::min(steps, 2 * nodes);
  return (steps - between) * hops.inner + between * outer;
}

CostModel::CollectiveTerms CostModel::SearchCollectiveTerms(CollectiveKind kind, double bytes,
                                                            int64_t group_size, double bandwidth,
                                                            const HopLatency& latency) const {
  const double p = static_cast<double>(group_size), n = std::max(0.0, bytes);
  CollectiveTerms ring;
  ring.latency = LatencySeconds(kind, group_size, latency, false);
  ring.transfer = kind == CollectiveKind::kPermute     ? n / bandwidth
                  : kind == CollectiveKind::kAllReduce ? 2 * (p - 1) / p * n / bandwidth
                                                       : (p - 1) / p * n / bandwidth;
  if (kind == CollectiveKind::kAllReduce && tree_all_reduce) {
    const CollectiveTerms tree{LatencySeconds(kind, group_size, latency, true), 2 * n / bandwidth};
    if (tree.latency + tree.transfer < ring.latency + ring.transfer) return tree;
  }
  return ring;
}

double CostModel::SearchCollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                          double bandwidth, const HopLatency& latency) const {
  if (CollectiveSeconds(kind, bytes, group_size, bandwidth) <= 0) return 0.0;
  const CollectiveTerms terms = SearchCollectiveTerms(kind, bytes, group_size, bandwidth, latency);
  // group_sync_s is a whole collective (its latencies and overhead), so the floor applies to
  // both together: the overhead is not paid twice.
  return terms.transfer + std::max(terms.latency + collective_overhead_s, in_process.group_sync_s) +
         in_process.MaxHandoffSeconds();
}

double InProcessOverhead::GroupSyncSeconds(int64_t group_size, int64_t devices) const {
  if (pair_sync_s <= 0 || devices <= 2 || group_size >= devices) return group_sync_s;
  const double pair = std::min(pair_sync_s, group_sync_s);
  const double g = static_cast<double>(std::max<int64_t>(2, group_size));
  const double n = static_cast<double>(devices);
  // Linear from the measured size below the group to the one above: pairs, halves (when
  // measured and distinct from pairs), every device.
  if (half_sync_s > 0 && devices % 2 == 0 && devices / 2 > 2) {
    const double half = std::clamp(half_sync_s, pair, group_sync_s);
    if (g <= n / 2) return pair + (half - pair) * (g - 2) / (n / 2 - 2);
    return half + (group_sync_s - half) * (g - n / 2) / (n / 2);
  }
  return pair + (group_sync_s - pair) * (g - 2) / (n - 2);
}

double CostModel::SearchExchangeSeconds(int64_t messages, double bytes_received, double bandwidth,
                                        int steps, const HopLatency& latency) const {
  if (bytes_received <= 0) return 0.0;
  // An irregular exchange's messages wait for the slowest link (no ring to blend).
  const double own = static_cast<double>(std::max<int64_t>(0, messages)) *
                     (latency.outer < 0 ? latency_s : latency.outer);
  const double n = std::max(1, steps);
  return std::max(own + n * collective_overhead_s, n * in_process.group_sync_s) +
         bytes_received / bandwidth + n * in_process.MaxHandoffSeconds();
}

double CostModel::SearchCollectiveAfterSeconds(CollectiveKind kind, double bytes,
                                               int64_t group_size, double bandwidth,
                                               const HopLatency& latency,
                                               double compute_before) const {
  const double s = SearchCollectiveSeconds(kind, bytes, group_size, bandwidth, latency);
  if (s <= 0) return 0.0;
  return s - in_process.MaxHandoffSeconds() + in_process.HandoffSeconds(compute_before);
}

double CostModel::SearchExchangeAfterSeconds(int64_t messages, double bytes_received,
                                             double bandwidth, int steps, const HopLatency& latency,
                                             double compute_before) const {
  const double s = SearchExchangeSeconds(messages, bytes_received, bandwidth, steps, latency);
  if (s <= 0) return 0.0;
  return s - std::max(1, steps) * in_process.MaxHandoffSeconds() +
         in_process.HandoffSeconds(compute_before);
}

size_t CostModel::Fingerprint() const {
  size_t h = std::hash<double>()(latency_s);
  h = HashCombine(h, std::hash<double>()(default_bandwidth));
  h = HashCombine(h, std::hash<double>()(flops));
  h = HashCombine(h, std::hash<double>()(memory_bandwidth));
  h = HashCombine(h, std::hash<bool>()(tree_all_reduce));
  h = HashCombine(h, std::hash<bool>()(hierarchical_collectives));
  for (const auto& [name, bw] : axis_bandwidth) {
    h = HashCombine(h, std::hash<std::string>()(name));
    h = HashCombine(h, std::hash<double>()(bw));
  }
  return h;
}

std::string CostModel::ToString() const {
  char lat[32];
  std::snprintf(lat, sizeof lat, "%g us", latency_s * 1e6);
  std::string out = std::string("alpha=") + lat + " beta=" + Rate(default_bandwidth, "B/s");
  if (!axis_bandwidth.empty()) {
    out += " (";
    bool first = true;
    for (const auto& [name, bw] : axis_bandwidth) {
      if (!first) out += ", ";
      first = false;
      out += name + "=" + Rate(bw, "B/s");
    }
    out += ")";
  }
  for (const auto& [name, lat] : axis_latency) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " alpha(%s)=%g us", name.c_str(), lat * 1e6);
    out += buf;
  }
  out += " flops=" + Rate(flops, "F/s") + " mem=" + Rate(memory_bandwidth, "B/s");
  const InProcessOverhead& ip = in_process;
  if (ip.compute_slots > 0) {
    char slots[32];
    std::snprintf(slots, sizeof slots, " slots=%g", ip.compute_slots);
    out += slots;
  }
  // A term in microseconds, when set.
  const auto append_micros = [&out](double seconds, const char* format) {
    if (seconds <= 0) return;
    char buf[48];
    std::snprintf(buf, sizeof buf, format, seconds * 1e6);
    out += buf;
  };
  append_micros(ip.collective_handoff_s, " handoff=%g us");
  append_micros(ip.long_phase_handoff_s, " long-phase handoff=%g us");
  if (!gemm_rates.empty()) out += " gemm=" + Rate(gemm_rates.base_flops, "F/s") + " (by shape)";
  if (!conv_gemm_rates.empty())
    out += " conv gemm=" + Rate(conv_gemm_rates.base_flops, "F/s") + " (by shape)";
  for (const auto& [kind, rate] : kernel_rates) out += " " + kind + "=" + Rate(rate, "B/s");
  append_micros(ip.group_sync_s, " sync=%g us");
  append_micros(ip.pair_sync_s, " (pairs %g us)");
  append_micros(ip.half_sync_s, " (halves %g us)");
  return out;
}

}  // namespace shardscope

#include "shardscope/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
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

Result<std::vector<std::pair<int64_t, double>>> GemmPointsFromJson(const nlohmann::json& j,
                                                                   const std::string& where) {
  if (!j.is_array())
    return Status::Invalid(where + " must be an array of [dimension, flop/s] pairs");
  std::vector<std::pair<int64_t, double>> points;
  for (const auto& p : j) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || p[0].get<int64_t>() < 1 ||
        !p[1].is_number() || p[1].get<double>() <= 0)
      return Status::Invalid(where + ": each entry must be [dimension >= 1, flop/s > 0]");
    if (!points.empty() && p[0].get<int64_t>() <= points.back().first)
      return Status::Invalid(where + ": dimensions must be strictly ascending");
    points.emplace_back(p[0].get<int64_t>(), p[1].get<double>());
  }
  return points;
}

// `name`: the profile's field ("gemm_rates", "conv_gemm_rates"), for the messages.
Result<GemmRateTable> GemmRateTableFromJson(const nlohmann::json& j, const std::string& where,
                                            const std::string& name) {
  if (!j.is_object()) return Status::Invalid(where + ": " + name + " must be an object");
  GemmRateTable t;
  for (const auto& [key, value] : j.items()) {
    const std::string at = where + ": " + name + "." + key;
    if (key == "base") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1)
        return Status::Invalid(at + " must be a positive integer");
      t.base = value.get<int64_t>();
    } else if (key == "base_flops") {
      if (!value.is_number() || value.get<double>() <= 0)
        return Status::Invalid(at + " must be a positive number");
      t.base_flops = value.get<double>();
    } else if (key == "rows" || key == "depth" || key == "cols") {
      SHARDSCOPE_ASSIGN_OR_RETURN(auto points, GemmPointsFromJson(value, at));
      (key == "rows" ? t.rows : key == "depth" ? t.depth : t.cols) = std::move(points);
    } else {
      return Status::Invalid(at + ": unknown field (known: base, base_flops, rows, depth, cols)");
    }
  }
  if (t.base_flops <= 0 && !(t.rows.empty() && t.depth.empty() && t.cols.empty()))
    return Status::Invalid(where + ": " + name + " needs base_flops with its tables");
  return t;
}

nlohmann::ordered_json GemmPointsToJson(const std::vector<std::pair<int64_t, double>>& points) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& [dim, rate] : points) j.push_back({dim, rate});
  return j;
}

void GemmRateTableToJson(const GemmRateTable& t, nlohmann::ordered_json* g) {
  (*g)["base"] = t.base;
  (*g)["base_flops"] = t.base_flops;
  (*g)["rows"] = GemmPointsToJson(t.rows);
  (*g)["depth"] = GemmPointsToJson(t.depth);
  (*g)["cols"] = GemmPointsToJson(t.cols);
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
    case CollectiveKind::kAllReduce:
      return 2 * (p - 1) * latency_s + 2 * share;
    case CollectiveKind::kPermute:
      return latency_s + std::max(0.0, bytes) / bandwidth;
  }
  return 0.0;
}

double CostModel::CollectiveSeconds(CollectiveKind kind, double bytes, const DeviceMesh& mesh,
                                    const std::vector<int>& axes) const {
  return CollectiveSeconds(kind, bytes, mesh.GroupSize(axes), Bandwidth(mesh, axes));
}

double CostModel::ExchangeSeconds(int64_t messages, double bytes_received, double bandwidth) const {
  return static_cast<double>(std::max<int64_t>(0, messages)) * latency_s +
         std::max(0.0, bytes_received) / bandwidth;
}

double CostModel::SearchCollectiveSeconds(CollectiveKind kind, double bytes, int64_t group_size,
                                          double bandwidth, double latency) const {
  const double s = CollectiveSeconds(kind, bytes, group_size, bandwidth);
  if (s <= 0) return 0.0;
  const double messages = LatencyMessages(kind, group_size);
  const double own = messages * (latency < 0 ? latency_s : latency);
  // group_sync_s is a whole collective (its latencies and overhead), so the floor applies to
  // both together: the overhead is not paid twice.
  return s - messages * latency_s + std::max(own + collective_overhead_s, group_sync_s) +
         MaxHandoffSeconds();
}

double CostModel::GroupSyncSeconds(int64_t group_size, int64_t devices) const {
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
                                        int steps, double latency) const {
  if (bytes_received <= 0) return 0.0;
  const double own =
      static_cast<double>(std::max<int64_t>(0, messages)) * (latency < 0 ? latency_s : latency);
  const double n = std::max(1, steps);
  return std::max(own + n * collective_overhead_s, n * group_sync_s) + bytes_received / bandwidth +
         n * MaxHandoffSeconds();
}

double CostModel::SearchCollectiveAfterSeconds(CollectiveKind kind, double bytes,
                                               int64_t group_size, double bandwidth, double latency,
                                               double compute_before) const {
  const double s = SearchCollectiveSeconds(kind, bytes, group_size, bandwidth, latency);
  if (s <= 0) return 0.0;
  return s - MaxHandoffSeconds() + SearchHandoffSeconds(compute_before);
}

double CostModel::SearchExchangeAfterSeconds(int64_t messages, double bytes_received,
                                             double bandwidth, int steps, double latency,
                                             double compute_before) const {
  const double s = SearchExchangeSeconds(messages, bytes_received, bandwidth, steps, latency);
  if (s <= 0) return 0.0;
  return s - std::max(1, steps) * MaxHandoffSeconds() + SearchHandoffSeconds(compute_before);
}

size_t CostModel::Fingerprint() const {
  size_t h = std::hash<double>()(latency_s);
  h = HashCombine(h, std::hash<double>()(default_bandwidth));
  h = HashCombine(h, std::hash<double>()(flops));
  h = HashCombine(h, std::hash<double>()(memory_bandwidth));
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
  if (compute_slots > 0) {
    char slots[32];
    std::snprintf(slots, sizeof slots, " slots=%g", compute_slots);
    out += slots;
  }
  // A term in microseconds, when set.
  const auto append_micros = [&out](double seconds, const char* format) {
    if (seconds <= 0) return;
    char buf[48];
    std::snprintf(buf, sizeof buf, format, seconds * 1e6);
    out += buf;
  };
  append_micros(collective_handoff_s, " handoff=%g us");
  append_micros(long_phase_handoff_s, " long-phase handoff=%g us");
  if (!gemm_rates.empty()) out += " gemm=" + Rate(gemm_rates.base_flops, "F/s") + " (by shape)";
  if (!conv_gemm_rates.empty())
    out += " conv gemm=" + Rate(conv_gemm_rates.base_flops, "F/s") + " (by shape)";
  for (const auto& [kind, rate] : kernel_rates) out += " " + kind + "=" + Rate(rate, "B/s");
  append_micros(group_sync_s, " sync=%g us");
  append_micros(pair_sync_s, " (pairs %g us)");
  append_micros(half_sync_s, " (halves %g us)");
  return out;
}

namespace {
// A profile's object of positive numbers by name ("axis_bandwidth", "kernel_rates").
Status PositiveNumbers(const nlohmann::json& value, const std::string& where,
                       const std::string& key, std::map<std::string, double>* out) {
  if (!value.is_object()) return Status::Invalid(where + ": " + key + " must be an object");
  for (const auto& [name, number] : value.items()) {
    if (!number.is_number() || number.get<double>() <= 0)
      return Status::Invalid(where + ": " + key + "." + name + " must be a positive number");
    (*out)[name] = number.get<double>();
  }
  return Status::Ok();
}
}  // namespace

Result<CostModel> CostModelFromJson(const std::string& text, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::Invalid(where + ": not a JSON object (a cost profile, as calibrate writes)");
  CostModel m;
  const std::pair<const char*, double*> fields[] = {
      {"latency_s", &m.latency_s},
      {"default_bandwidth", &m.default_bandwidth},
      {"flops", &m.flops},
      {"memory_bandwidth", &m.memory_bandwidth},
      {"collective_overhead_s", &m.collective_overhead_s},
      {"compute_slots", &m.compute_slots},
      {"collective_handoff_s", &m.collective_handoff_s},
      {"long_phase_handoff_s", &m.long_phase_handoff_s},
      {"group_sync_s", &m.group_sync_s},
      {"pair_sync_s", &m.pair_sync_s},
      {"half_sync_s", &m.half_sync_s}};
  for (const auto& [key, value] : j.items()) {
    if (key == "axis_bandwidth" || key == "kernel_rates") {
      SHARDSCOPE_RETURN_IF_ERROR(PositiveNumbers(
          value, where, key, key == "axis_bandwidth" ? &m.axis_bandwidth : &m.kernel_rates));
      continue;
    }
    if (key == "axis_latency") {
      if (!value.is_object()) return Status::Invalid(where + ": axis_latency must be an object");
      for (const auto& [axis, lat] : value.items()) {
        if (!lat.is_number() || lat.get<double>() < 0)
          return Status::Invalid(where + ": axis_latency." + axis +
                                 " must be a non-negative number of seconds");
        m.axis_latency[axis] = lat.get<double>();
      }
      continue;
    }
    if (key == "gemm_rates") {
      SHARDSCOPE_ASSIGN_OR_RETURN(m.gemm_rates, GemmRateTableFromJson(value, where, key));
      continue;
    }
    if (key == "conv_gemm_rates") {
      SHARDSCOPE_ASSIGN_OR_RETURN(m.conv_gemm_rates, GemmRateTableFromJson(value, where, key));
      continue;
    }
    if (key == "measured" || key == "comment") continue;  // calibrate's notes
    double* target = nullptr;
    for (const auto& [name, field] : fields) {
      if (key == name) target = field;
    }
    if (target == nullptr) {
      return Status::Invalid(
          where + ": unknown field '" + key +
          "' (known: latency_s, default_bandwidth, axis_bandwidth, axis_latency, flops, "
          "memory_bandwidth, collective_overhead_s, compute_slots, collective_handoff_s, "
          "long_phase_handoff_s, group_sync_s, pair_sync_s, half_sync_s, gemm_rates, "
          "conv_gemm_rates, kernel_rates)");
    }
    if (!value.is_number() || value.get<double>() < 0 ||
        (key != "latency_s" && key != "collective_overhead_s" && key != "compute_slots" &&
         key != "collective_handoff_s" && key != "long_phase_handoff_s" && key != "group_sync_s" &&
         key != "pair_sync_s" && key != "half_sync_s" && value.get<double>() == 0)) {
      return Status::Invalid(where + ": " + key + " must be a positive number");
    }
    *target = value.get<double>();
  }
  return m;
}

Result<CostModel> LoadCostModel(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Io(path + ": cannot open cost profile");
  std::stringstream text;
  text << in.rdbuf();
  return CostModelFromJson(text.str(), path);
}

std::string CostModelToJson(const CostModel& m) {
  nlohmann::ordered_json j;
  j["latency_s"] = m.latency_s;
  j["default_bandwidth"] = m.default_bandwidth;
  j["axis_bandwidth"] = nlohmann::ordered_json::object();
  for (const auto& [axis, bw] : m.axis_bandwidth) j["axis_bandwidth"][axis] = bw;
  j["axis_latency"] = nlohmann::ordered_json::object();
  for (const auto& [axis, lat] : m.axis_latency) j["axis_latency"][axis] = lat;
  j["flops"] = m.flops;
  j["memory_bandwidth"] = m.memory_bandwidth;
  j["collective_overhead_s"] = m.collective_overhead_s;
  j["compute_slots"] = m.compute_slots;
  j["collective_handoff_s"] = m.collective_handoff_s;
  if (m.long_phase_handoff_s > 0) j["long_phase_handoff_s"] = m.long_phase_handoff_s;
  j["group_sync_s"] = m.group_sync_s;
  if (m.pair_sync_s > 0) j["pair_sync_s"] = m.pair_sync_s;
  if (m.half_sync_s > 0) j["half_sync_s"] = m.half_sync_s;
  if (!m.gemm_rates.empty()) GemmRateTableToJson(m.gemm_rates, &j["gemm_rates"]);
  if (!m.conv_gemm_rates.empty()) GemmRateTableToJson(m.conv_gemm_rates, &j["conv_gemm_rates"]);
  if (!m.kernel_rates.empty()) {
    j["kernel_rates"] = nlohmann::ordered_json::object();
    for (const auto& [kind, rate] : m.kernel_rates) j["kernel_rates"][kind] = rate;
  }
  return j.dump(2);
}

}  // namespace shardscope

// The cost profile's fields (one table) and the JSON profile read and written through it.
#include "shardscope/cost/profile_fields.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "shardscope/base/names.h"

namespace shardscope {
namespace {

using Kind = ProfileFieldKind;

// Accessors by member; a field names its member once, here.
#define SS_NUM(member) [](CostModel& m) -> double* { return &m.member; }
#define SS_MAP(member) [](CostModel& m) -> std::map<std::string, double>* { return &m.member; }
#define SS_TABLE(member) [](CostModel& m) -> GemmRateTable* { return &m.member; }
#define SS_FLAG(member) [](CostModel& m) -> bool* { return &m.member; }

std::vector<ProfileField> MakeFields() {
  std::vector<ProfileField> f = {
      {"latency_s", Kind::kSeconds, false, "per-message latency (alpha), seconds",
       SS_NUM(latency_s)},
      {"default_bandwidth", Kind::kRate, false,
       "link bandwidth (beta) of an axis without its own, bytes/s per direction",
       SS_NUM(default_bandwidth)},
      {"axis_bandwidth", Kind::kAxisRates, false, "bandwidth per mesh axis name, bytes/s", nullptr,
       SS_MAP(axis_bandwidth)},
      {"axis_latency", Kind::kAxisTimes, false,
       "latency per mesh axis name, seconds (searches and PriceProgram)", nullptr,
       SS_MAP(axis_latency)},
      {"flops", Kind::kRate, false, "sustained compute rate per device, flop/s", SS_NUM(flops)},
      {"memory_bandwidth", Kind::kRate, false, "local memory bandwidth, bytes/s",
       SS_NUM(memory_bandwidth)},
      {"collective_overhead_s", Kind::kSeconds, false,
       "fixed cost of issuing one collective (launch), seconds; searches only",
       SS_NUM(collective_overhead_s)},
      {"tree_all_reduce", Kind::kFlag, false,
       "all-reduce at the cheaper of ring and double binary tree (NCCL); false: ring only", nullptr,
       nullptr, nullptr, SS_FLAG(tree_all_reduce)},
      {"hierarchical_collectives", Kind::kFlag, false,
       "a ring or tree over several axes crosses an outer axis on every link its group has "
       "there (NCCL's channel per NIC); false: the slowest link alone",
       nullptr, nullptr, nullptr, SS_FLAG(hierarchical_collectives)},
      {"overlap_gradients", Kind::kFlag, false,
       "gradient reductions overlap the backward, only their tail past it is paid (DDP); "
       "false: their sum",
       nullptr, nullptr, nullptr, SS_FLAG(overlap_gradients)},
      {"gradient_bucket_bytes", Kind::kCount, false,
       "parameter gradients all-reduced in buckets of this many bytes (DDP); 0 = one each",
       SS_NUM(gradient_bucket_bytes), nullptr, nullptr, nullptr, true},
      {"gemm_rates", Kind::kGemmTable, false,
       "MatMul rate by GEMM shape (GemmRateTable); searches only", nullptr, nullptr,
       SS_TABLE(gemm_rates)},
      {"conv_gemm_rates", Kind::kGemmTable, false,
       "Conv2D rate by the shape of its per-image GEMM, im2col included; searches only", nullptr,
       nullptr, SS_TABLE(conv_gemm_rates)},
      {"kernel_rates", Kind::kKindRates, false,
       "memory-bound kernels: operator name -> input bytes/s of forward and gradient", nullptr,
       SS_MAP(kernel_rates)},
      {"compute_slots", Kind::kCount, true,
       "devices computing at once (cores for the device threads); 0 = each its own",
       SS_NUM(in_process.compute_slots)},
      {"collective_handoff_s", Kind::kSeconds, true,
       "a collective after computation: rescheduling the device threads, seconds",
       SS_NUM(in_process.collective_handoff_s)},
      {"long_phase_handoff_s", Kind::kSeconds, true,
       "the same after a long phase of computation (it started on one core), seconds",
       SS_NUM(in_process.long_phase_handoff_s), nullptr, nullptr, nullptr, true},
      {"group_sync_s", Kind::kSeconds, true,
       "least cost of a collective on all device threads (4-byte all-reduce), seconds",
       SS_NUM(in_process.group_sync_s)},
      {"pair_sync_s", Kind::kSeconds, true,
       "the same in pairs, all pairs at once, seconds; PriceProgram only",
       SS_NUM(in_process.pair_sync_s), nullptr, nullptr, nullptr, true},
      {"half_sync_s", Kind::kSeconds, true,
       "the same in two halves of the devices, seconds; PriceProgram only",
       SS_NUM(in_process.half_sync_s), nullptr, nullptr, nullptr, true},
  };
  return f;
}

#undef SS_NUM
#undef SS_MAP
#undef SS_TABLE
#undef SS_FLAG

std::vector<std::string> FieldNames() {
  std::vector<std::string> names;
  for (const ProfileField& f : CostProfileFields()) names.push_back(f.name);
  return names;
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

Result<GemmRateTable> GemmRateTableFromJson(const nlohmann::json& j, const std::string& at) {
  if (!j.is_object()) return Status::Invalid(at + " must be an object");
  GemmRateTable t;
  for (const auto& [key, value] : j.items()) {
    const std::string field = at + "." + key;
    if (key == "base") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1)
        return Status::Invalid(field + " must be a positive integer");
      t.base = value.get<int64_t>();
    } else if (key == "base_flops") {
      if (!value.is_number() || value.get<double>() <= 0)
        return Status::Invalid(field + " must be a positive number");
      t.base_flops = value.get<double>();
    } else if (key == "rows" || key == "depth" || key == "cols") {
      SHARDSCOPE_ASSIGN_OR_RETURN(auto points, GemmPointsFromJson(value, field));
      (key == "rows" ? t.rows : key == "depth" ? t.depth : t.cols) = std::move(points);
    } else {
      return Status::Invalid(field + ": unknown field" +
                             DidYouMean(key, {"base", "base_flops", "rows", "depth", "cols"}) +
                             " (known: base, base_flops, rows, depth, cols)");
    }
  }
  if (t.base_flops <= 0 && !(t.rows.empty() && t.depth.empty() && t.cols.empty()))
    return Status::Invalid(at + " needs base_flops with its tables");
  return t;
}

nlohmann::ordered_json GemmPointsToJson(const std::vector<std::pair<int64_t, double>>& points) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& [dim, rate] : points) j.push_back({dim, rate});
  return j;
}

// One field's value from `value` into `m`; `at` is "FILE: NAME" for the messages.
Status ReadField(const ProfileField& f, const nlohmann::json& value, const std::string& at,
                 CostModel* m) {
  switch (f.kind) {
    case Kind::kSeconds:
    case Kind::kCount:
    case Kind::kRate: {
      const bool positive = f.kind == Kind::kRate;
      if (!value.is_number() || value.get<double>() < 0 || (positive && value.get<double>() == 0))
        return Status::Invalid(at + " must be a " + (positive ? "positive" : "non-negative") +
                               " number");
      *f.number(*m) = value.get<double>();
      return Status::Ok();
    }
    case Kind::kAxisRates:
    case Kind::kAxisTimes:
    case Kind::kKindRates: {
      if (!value.is_object()) return Status::Invalid(at + " must be an object");
      const bool zero_ok = f.kind == Kind::kAxisTimes;
      for (const auto& [name, number] : value.items()) {
        if (!number.is_number() || number.get<double>() < 0 ||
            (!zero_ok && number.get<double>() == 0))
          return Status::Invalid(at + "." + name + " must be a " +
                                 (zero_ok ? "non-negative" : "positive") + " number");
        (*f.map(*m))[name] = number.get<double>();
      }
      return Status::Ok();
    }
    case Kind::kGemmTable: {
      SHARDSCOPE_ASSIGN_OR_RETURN(*f.table(*m), GemmRateTableFromJson(value, at));
      return Status::Ok();
    }
    case Kind::kFlag:
      if (!value.is_boolean()) return Status::Invalid(at + " must be true or false");
      *f.flag(*m) = value.get<bool>();
      return Status::Ok();
  }
  return Status::Ok();
}

// One field into `j`; the in-process term only when it has a figure (calibrate's profiles),
// fields marked omit_zero and empty tables left out, as older profiles were written.
void WriteField(const ProfileField& f, const CostModel& model, nlohmann::ordered_json* j) {
  CostModel& m = const_cast<CostModel&>(model);  // the accessors only read here
  switch (f.kind) {
    case Kind::kSeconds:
    case Kind::kCount:
    case Kind::kRate:
      if ((!f.in_process || !m.in_process.empty()) && !(f.omit_zero && *f.number(m) <= 0))
        (*j)[f.name] = *f.number(m);
      return;
    case Kind::kAxisRates:
    case Kind::kAxisTimes:
    case Kind::kKindRates: {
      const auto& values = *f.map(m);
      if (values.empty() && f.kind == Kind::kKindRates) return;
      nlohmann::ordered_json& o = (*j)[f.name] = nlohmann::ordered_json::object();
      for (const auto& [name, v] : values) o[name] = v;
      return;
    }
    case Kind::kGemmTable: {
      const GemmRateTable& t = *f.table(m);
      if (t.empty()) return;
      nlohmann::ordered_json& g = (*j)[f.name];
      g["base"] = t.base;
      g["base_flops"] = t.base_flops;
      g["rows"] = GemmPointsToJson(t.rows);
      g["depth"] = GemmPointsToJson(t.depth);
      g["cols"] = GemmPointsToJson(t.cols);
      return;
    }
    case Kind::kFlag:
      if (*f.flag(m)) (*j)[f.name] = true;
      return;
  }
}

}  // namespace

const std::vector<ProfileField>& CostProfileFields() {
  static const std::vector<ProfileField> fields = MakeFields();
  return fields;
}

std::string CostProfileFieldsHelp() {
  std::string out;
  for (bool in_process : {false, true}) {
    out += in_process ? "in-process term (this machine; calibrate measures it):\n"
                      : "portable core:\n";
    for (const ProfileField& f : CostProfileFields()) {
      if (f.in_process == in_process) out += std::string("  ") + f.name + ": " + f.doc + "\n";
    }
  }
  return out;
}

Result<CostModel> CostModelFromJson(const std::string& text, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::Invalid(where + ": not a JSON object (a cost profile, as calibrate writes)");
  CostModel m;
  for (const auto& [key, value] : j.items()) {
    if (key == "measured" || key == "comment") continue;  // calibrate's notes
    const ProfileField* field = nullptr;
    for (const ProfileField& f : CostProfileFields()) {
      if (key == f.name) field = &f;
    }
    if (field == nullptr) {
      std::string known;
      for (const std::string& n : FieldNames()) known += (known.empty() ? "" : ", ") + n;
      // A typo would silently keep a default, so unknown fields are refused.
      return Status::Invalid(where + ": unknown field '" + key + "'" +
                             DidYouMean(key, FieldNames()) + " (known: " + known + ")");
    }
    SHARDSCOPE_RETURN_IF_ERROR(ReadField(*field, value, where + ": " + key, &m));
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
  for (const ProfileField& f : CostProfileFields()) WriteField(f, m, &j);
  return j.dump(2);
}

}  // namespace shardscope

#include "json_text.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace shardscope::store::internal {
namespace {

// ordered_json keeps the keys in the order written ("first", "members", "groups"), so the
// text stays byte for byte what earlier writers produced and their readers expect.
using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) {
  // Invalid UTF-8 in a name is replaced (U+FFFD) rather than thrown: nothing leaves the store.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool IsBlank(std::string_view text) {
  return text.find_first_not_of(" \t\n\r") == std::string_view::npos;
}

// Parses `text` as one JSON value; false on any syntax error (damaged text is refused).
bool Parse(std::string_view text, Json* out) {
  try {
    *out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (const Json::exception&) {
    return false;
  }
  return !out->is_discarded();
}

bool Int(const Json& j, int64_t* value) {
  if (j.is_number_unsigned()) {
    const auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *value = static_cast<int64_t>(u);
    return true;
  }
  if (!j.is_number_integer()) return false;
  *value = j.get<int64_t>();
  return true;
}

// The most frequent column shape (shapes, per-rank bytes) read without building a DOM:
// nlohmann's parser reports each token and anything but one flat array of integers fails.
class IntArraySax {
 public:
  explicit IntArraySax(std::vector<int64_t>* out) : out_(out) {}
  bool complete() const { return state_ == kDone; }

  bool start_array(size_t) { return state_ == kBefore ? (state_ = kInside, true) : false; }
  bool end_array() { return state_ == kInside ? (state_ = kDone, true) : false; }
  bool number_integer(Json::number_integer_t v) { return Add(v); }
  bool number_unsigned(Json::number_unsigned_t v) {
    return v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
           Add(static_cast<int64_t>(v));
  }
  bool null() { return false; }
  bool boolean(bool) { return false; }
  bool number_float(Json::number_float_t, const Json::string_t&) { return false; }
  bool string(Json::string_t&) { return false; }
  bool binary(Json::binary_t&) { return false; }
  bool start_object(size_t) { return false; }
  bool key(Json::string_t&) { return false; }
  bool end_object() { return false; }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool Add(int64_t v) {
    if (state_ != kInside) return false;
    out_->push_back(v);
    return true;
  }
  enum { kBefore, kInside, kDone } state_ = kBefore;
  std::vector<int64_t>* out_;
};

bool Ints(const Json& j, std::vector<int64_t>* out) {
  out->clear();
  if (!j.is_array()) return false;
  out->reserve(j.size());
  for (const Json& v : j) {
    int64_t x = 0;
    if (!Int(v, &x)) return false;
    out->push_back(x);
  }
  return true;
}

bool IntLists(const Json& j, std::vector<std::vector<int64_t>>* out) {
  out->clear();
  if (!j.is_array()) return false;
  out->resize(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!Ints(j[i], &(*out)[i])) return false;
  }
  return true;
}

bool Transfers(const Json& j, std::vector<TransferRecord>* out) {
  out->clear();
  if (!j.is_array()) return false;
  for (const Json& row : j) {
    TransferRecord t;
    if (!row.is_array() || row.size() != 4 || !Int(row[0], &t.src) || !Int(row[1], &t.dst) ||
        !Ints(row[2], &t.offset) || !Ints(row[3], &t.extent)) {
      return false;
    }
    out->push_back(std::move(t));
  }
  return true;
}

Json Axes(const std::vector<GridAxis>& axes) {
  Json out = Json::array();
  for (const GridAxis& a : axes) out.push_back(Json::array({a.size, a.stride}));
  return out;
}

// A grid of more than 2^24 ranks is refused: a damaged file must not expand without bound.
bool ReadAxes(const Json& j, std::vector<GridAxis>* axes, int64_t* count) {
  axes->clear();
  if (!j.is_array()) return false;
  for (const Json& pair : j) {
    GridAxis a;
    if (!pair.is_array() || pair.size() != 2 || !Int(pair[0], &a.size) ||
        !Int(pair[1], &a.stride)) {
      return false;
    }
    constexpr int64_t kMaxRanks = int64_t{1} << 24;
    if (a.size < 1 || a.size > kMaxRanks || *count > kMaxRanks / a.size) return false;
    *count *= a.size;
    axes->push_back(a);
  }
  return true;
}

// An object with exactly these keys (in any order).
bool HasExactly(const Json& j, std::initializer_list<const char*> keys) {
  if (!j.is_object() || j.size() != keys.size()) return false;
  for (const char* k : keys) {
    if (!j.contains(k)) return false;
  }
  return true;
}

}  // namespace

std::string JsonInts(const std::vector<int64_t>& values) { return Dump(Json(values)); }

std::string JsonIntLists(const std::vector<std::vector<int64_t>>& lists) {
  return Dump(Json(lists));
}

std::string JsonStrings(const std::vector<std::string>& values) { return Dump(Json(values)); }

std::string JsonTransfers(const std::vector<TransferRecord>& transfers) {
  Json out = Json::array();
  for (const TransferRecord& t : transfers) {
    out.push_back(Json::array({t.src, t.dst, Json(t.offset), Json(t.extent)}));
  }
  return Dump(out);
}

std::string JsonRankGroups(const RankGroups& groups) {
  if (!groups.is_grid()) return JsonIntLists(groups.list());
  Json out = Json::object();
  out["first"] = groups.first();
  out["members"] = Axes(groups.members());
  out["groups"] = Axes(groups.groups());
  return Dump(out);
}

std::string JsonTransferList(const TransferList& transfers) {
  if (transfers.empty()) return "[]";
  Json runs = Json::array();
  std::vector<int64_t> row;
  for (const TransferList::Run& r : transfers.runs()) {
    row = {r.count, r.offset_dims};
    row.insert(row.end(), r.first.begin(), r.first.end());
    row.insert(row.end(), r.delta.begin(), r.delta.end());
    runs.push_back(Json(row));
  }
  Json out = Json::object();
  out["runs"] = std::move(runs);
  return Dump(out);
}

bool ParseInts(std::string_view text, std::vector<int64_t>* out) {
  out->clear();
  if (IsBlank(text)) return true;
  IntArraySax sax(out);
  try {
    return Json::sax_parse(text, &sax) && sax.complete();
  } catch (const Json::exception&) {
    return false;
  }
}

bool ParseIntLists(std::string_view text, std::vector<std::vector<int64_t>>* out) {
  out->clear();
  Json j;
  return IsBlank(text) || (Parse(text, &j) && IntLists(j, out));
}

bool ParseStrings(std::string_view text, std::vector<std::string>* out) {
  out->clear();
  if (IsBlank(text)) return true;
  Json j;
  if (!Parse(text, &j) || !j.is_array()) return false;
  for (const Json& s : j) {
    if (!s.is_string()) return false;
    out->push_back(s.get<std::string>());
  }
  return true;
}

bool ParseTransfers(std::string_view text, std::vector<TransferRecord>* out) {
  out->clear();
  Json j;
  return IsBlank(text) || (Parse(text, &j) && Transfers(j, out));
}

bool ParseRankGroups(std::string_view text, RankGroups* out) {
  Json j;
  if (IsBlank(text)) {
    *out = RankGroups();
    return true;
  }
  if (!Parse(text, &j)) return false;
  if (!j.is_object()) {
    std::vector<std::vector<int64_t>> list;
    if (!IntLists(j, &list)) return false;
    *out = RankGroups(std::move(list));
    return true;
  }
  int64_t first = 0, count = 1;
  std::vector<GridAxis> members, groups;
  if (!HasExactly(j, {"first", "members", "groups"}) || !Int(j["first"], &first) ||
      !ReadAxes(j["members"], &members, &count) || !ReadAxes(j["groups"], &groups, &count)) {
    return false;
  }
  *out = RankGroups::Grid(first, std::move(members), std::move(groups));
  return true;
}

bool ParseTransferList(std::string_view text, TransferList* out) {
  *out = TransferList();
  if (IsBlank(text)) return true;
  Json j;
  if (!Parse(text, &j)) return false;
  if (!j.is_object()) {
    std::vector<TransferRecord> list;
    if (!Transfers(j, &list)) return false;
    *out = TransferList(list);
    return true;
  }
  if (!HasExactly(j, {"runs"}) || !j["runs"].is_array()) return false;
  int64_t total = 0;
  std::vector<int64_t> row;
  for (const Json& r_json : j["runs"]) {
    if (!Ints(r_json, &row) || row.size() < 6 || row.size() % 2 != 0) return false;
    TransferList::Run r;
    r.count = row[0];
    r.offset_dims = row[1];
    const size_t n = (row.size() - 2) / 2;
    // A run of no transfers, or more than 2^48 in all, is refused (bounded expansion).
    if (r.count < 1 || r.count > (int64_t{1} << 48) - total || r.offset_dims < 0 ||
        static_cast<size_t>(r.offset_dims) > n - 2) {
      return false;
    }
    total += r.count;
    r.first.assign(row.begin() + 2, row.begin() + 2 + static_cast<std::ptrdiff_t>(n));
    r.delta.assign(row.begin() + 2 + static_cast<std::ptrdiff_t>(n), row.end());
    out->AddRun(std::move(r));
  }
  return true;
}

}  // namespace shardscope::store::internal

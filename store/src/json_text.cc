#include "json_text.h"

#include <charconv>

namespace shardscope::store::internal {
namespace {

void AppendInts(std::string* out, const std::vector<int64_t>& values) {
  out->push_back('[');
  char buf[24];
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), values[i]);
    out->append(buf, end);
  }
  out->push_back(']');
}

void AppendQuoted(std::string* out, std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

// A cursor over the text with the few productions the shapes above need.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return p_ == end_;
  }
  bool Int(int64_t* value) {
    SkipSpace();
    auto [next, ec] = std::from_chars(p_, end_, *value);
    if (ec != std::errc() || next == p_) return false;
    p_ = next;
    return true;
  }
  bool String(std::string* value) {
    value->clear();
    if (!Eat('"')) return false;
    while (p_ < end_) {
      const char c = *p_++;
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        value->push_back(c);
        continue;
      }
      if (p_ == end_) return false;
      const char e = *p_++;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          value->push_back(e);
          break;
        case 'b':
          value->push_back('\b');
          break;
        case 'f':
          value->push_back('\f');
          break;
        case 'n':
          value->push_back('\n');
          break;
        case 'r':
          value->push_back('\r');
          break;
        case 't':
          value->push_back('\t');
          break;
        case 'u': {
          uint32_t code = 0;
          if (!Hex4(&code)) return false;
          if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair
            uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!Hex4(&low) || low < 0xDC00 || low >= 0xE000) return false;
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            return false;
          }
          AppendUtf8(value, code);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }

  // '[' item (',' item)* ']' or '[' ']'.
  template <typename F>
  bool Array(F&& item) {
    if (!Eat('[')) return false;
    if (Eat(']')) return true;
    do {
      if (!item()) return false;
    } while (Eat(','));
    return Eat(']');
  }

 private:
  bool Hex4(uint32_t* code) {
    if (end_ - p_ < 4) return false;
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = *p_++;
      uint32_t d;
      if (h >= '0' && h <= '9') {
        d = static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        d = static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        d = static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return false;
      }
      *code = *code * 16 + d;
    }
    return true;
  }
  static void AppendUtf8(std::string* out, uint32_t code) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  const char* p_;
  const char* end_;
};

bool IntArray(Cursor& c, std::vector<int64_t>* out) {
  out->clear();
  return c.Array([&] {
    int64_t v = 0;
    if (!c.Int(&v)) return false;
    out->push_back(v);
    return true;
  });
}

bool FirstIs(std::string_view text, char c) {
  for (char ch : text) {
    if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') return ch == c;
  }
  return false;
}

void AppendAxes(std::string* out, const std::vector<GridAxis>& axes) {
  out->push_back('[');
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendInts(out, {axes[i].size, axes[i].stride});
  }
  out->push_back(']');
}

// "key": (the key as written by the writer; the order of keys is fixed).
bool Key(Cursor& c, std::string_view key) {
  std::string name;
  return c.String(&name) && name == key && c.Eat(':');
}

bool Axes(Cursor& c, std::vector<GridAxis>* axes, int64_t* count) {
  axes->clear();
  return c.Array([&] {
    GridAxis a;
    if (!c.Eat('[') || !c.Int(&a.size) || !c.Eat(',') || !c.Int(&a.stride) || !c.Eat(']'))
      return false;
    constexpr int64_t kMaxRanks = int64_t{1} << 24;
    if (a.size < 1 || a.size > kMaxRanks || *count > kMaxRanks / a.size) return false;
    *count *= a.size;
    axes->push_back(a);
    return true;
  });
}

bool IsBlank(std::string_view text) {
  for (char ch : text) {
    if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') return false;
  }
  return true;
}

}  // namespace

std::string JsonInts(const std::vector<int64_t>& values) {
  std::string out;
  out.reserve(values.size() * 4 + 2);
  AppendInts(&out, values);
  return out;
}

std::string JsonIntLists(const std::vector<std::vector<int64_t>>& lists) {
  std::string out = "[";
  for (size_t i = 0; i < lists.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendInts(&out, lists[i]);
  }
  out.push_back(']');
  return out;
}

std::string JsonStrings(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendQuoted(&out, values[i]);
  }
  out.push_back(']');
  return out;
}

std::string JsonTransfers(const std::vector<TransferRecord>& transfers) {
  std::string out = "[";
  for (size_t i = 0; i < transfers.size(); ++i) {
    const TransferRecord& t = transfers[i];
    if (i > 0) out.push_back(',');
    out.push_back('[');
    out += std::to_string(t.src);
    out.push_back(',');
    out += std::to_string(t.dst);
    out.push_back(',');
    AppendInts(&out, t.offset);
    out.push_back(',');
    AppendInts(&out, t.extent);
    out.push_back(']');
  }
  out.push_back(']');
  return out;
}

std::string JsonQuote(std::string_view text) {
  std::string out;
  AppendQuoted(&out, text);
  return out;
}

std::string JsonRankGroups(const RankGroups& groups) {
  if (!groups.is_grid()) return JsonIntLists(groups.list());
  std::string out = "{\"first\":" + std::to_string(groups.first()) + ",\"members\":";
  AppendAxes(&out, groups.members());
  out += ",\"groups\":";
  AppendAxes(&out, groups.groups());
  out.push_back('}');
  return out;
}

std::string JsonTransferList(const TransferList& transfers) {
  if (transfers.empty()) return "[]";
  std::string out = "{\"runs\":[";
  std::vector<int64_t> row;
  for (size_t i = 0; i < transfers.runs().size(); ++i) {
    const TransferList::Run& r = transfers.runs()[i];
    row = {r.count, r.offset_dims};
    row.insert(row.end(), r.first.begin(), r.first.end());
    row.insert(row.end(), r.delta.begin(), r.delta.end());
    if (i > 0) out.push_back(',');
    AppendInts(&out, row);
  }
  out += "]}";
  return out;
}

bool ParseRankGroups(std::string_view text, RankGroups* out) {
  if (!FirstIs(text, '{')) {
    std::vector<std::vector<int64_t>> list;
    if (!ParseIntLists(text, &list)) return false;
    *out = RankGroups(std::move(list));
    return true;
  }
  Cursor c(text);
  int64_t first = 0, count = 1;
  std::vector<GridAxis> members, groups;
  if (!c.Eat('{') || !Key(c, "first") || !c.Int(&first) || !c.Eat(',') || !Key(c, "members") ||
      !Axes(c, &members, &count) || !c.Eat(',') || !Key(c, "groups") || !Axes(c, &groups, &count) ||
      !c.Eat('}') || !c.AtEnd()) {
    return false;
  }
  *out = RankGroups::Grid(first, std::move(members), std::move(groups));
  return true;
}

bool ParseTransferList(std::string_view text, TransferList* out) {
  *out = TransferList();
  if (!FirstIs(text, '{')) {
    std::vector<TransferRecord> list;
    if (!ParseTransfers(text, &list)) return false;
    *out = TransferList(list);
    return true;
  }
  Cursor c(text);
  int64_t total = 0;
  std::vector<int64_t> row;
  if (!c.Eat('{') || !Key(c, "runs")) return false;
  const bool runs = c.Array([&] {
    if (!IntArray(c, &row) || row.size() < 6 || row.size() % 2 != 0) return false;
    TransferList::Run r;
    r.count = row[0];
    r.offset_dims = row[1];
    const size_t n = (row.size() - 2) / 2;
    if (r.count < 1 || r.count > (int64_t{1} << 48) - total || r.offset_dims < 0 ||
        static_cast<size_t>(r.offset_dims) > n - 2) {
      return false;
    }
    total += r.count;
    r.first.assign(row.begin() + 2, row.begin() + 2 + static_cast<std::ptrdiff_t>(n));
    r.delta.assign(row.begin() + 2 + static_cast<std::ptrdiff_t>(n), row.end());
    out->AddRun(std::move(r));
    return true;
  });
  return runs && c.Eat('}') && c.AtEnd();
}

bool ParseInts(std::string_view text, std::vector<int64_t>* out) {
  out->clear();
  if (IsBlank(text)) return true;
  Cursor c(text);
  return IntArray(c, out) && c.AtEnd();
}

bool ParseIntLists(std::string_view text, std::vector<std::vector<int64_t>>* out) {
  out->clear();
  if (IsBlank(text)) return true;
  Cursor c(text);
  return c.Array([&] {
    out->emplace_back();
    return IntArray(c, &out->back());
  }) && c.AtEnd();
}

bool ParseStrings(std::string_view text, std::vector<std::string>* out) {
  out->clear();
  if (IsBlank(text)) return true;
  Cursor c(text);
  return c.Array([&] {
    out->emplace_back();
    return c.String(&out->back());
  }) && c.AtEnd();
}

bool ParseTransfers(std::string_view text, std::vector<TransferRecord>* out) {
  out->clear();
  if (IsBlank(text)) return true;
  Cursor c(text);
  return c.Array([&] {
    TransferRecord t;
    if (!c.Eat('[') || !c.Int(&t.src) || !c.Eat(',') || !c.Int(&t.dst) || !c.Eat(',') ||
        !IntArray(c, &t.offset) || !c.Eat(',') || !IntArray(c, &t.extent) || !c.Eat(']')) {
      return false;
    }
    out->push_back(std::move(t));
    return true;
  }) && c.AtEnd();
}

}  // namespace shardscope::store::internal

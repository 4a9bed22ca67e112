// Reading YAML with located errors: mappings with checked keys, scalars, shapes, inits.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "model_file_internal.h"
#include "shardscope/checked_math.h"

namespace shardscope::model_file {

void FailAt(const SourceLocation& loc, const std::string& message) {
  throw Error{Status::Invalid(loc.ToString() + ": " + message)};
}

SourceLocation Source::At(const YAML::Mark& mark) const {
  SourceLocation loc;
  loc.file = path_;
  if (mark.line >= 0 && mark.column >= 0) {
    loc.line = mark.line + 1;
    loc.column = mark.column + 1;
  }
  return loc;
}

SourceLocation Source::At(const YAML::Node& node) const { return At(node.Mark()); }

SourceLocation Source::AtOffset(const YAML::Node& node, size_t offset) const {
  SourceLocation loc = At(node);
  if (!node.IsScalar() || loc.line == 0) return loc;
  const std::string& value = node.Scalar();
  const size_t pos = static_cast<size_t>(node.Mark().pos);
  if (value.find('\n') != std::string::npos || pos >= text_.size()) return loc;
  if (text_.compare(pos, value.size(), value) == 0) {
    loc.column += static_cast<int>(offset);
  } else if ((text_[pos] == '"' || text_[pos] == '\'') &&
             text_.compare(pos + 1, value.size(), value) == 0) {
    loc.column += 1 + static_cast<int>(offset);
  }
  return loc;
}

namespace {

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
  }
  return "nothing";
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string Join(const std::vector<std::string>& names, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? sep : "") + names[i];
  return out;
}

Map::Map(const Source& src, const YAML::Node& node, std::string what,
         const std::vector<std::string>& allowed)
    : src_(src), node_(node), what_(std::move(what)), allowed_(allowed) {
  if (!node.IsMap()) {
    src.Fail(node, what_ + " must be a mapping (key: value lines), found " + Describe(node));
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar()) src.Fail(key, "a key in " + what_ + " must be a plain name");
    const std::string& k = key.Scalar();
    for (const Field& f : fields_) {
      if (f.key == k) {
        src.Fail(key, "duplicate key '" + k + "' in " + what_ + " (first given at " +
                          src.At(f.key_node).ToString() + ")");
      }
    }
    if (!allowed_.empty() && std::find(allowed_.begin(), allowed_.end(), k) == allowed_.end()) {
      std::string hint;
      if (k.find_first_of("()[]\"'") != std::string::npos ||
          (!k.empty() && std::isdigit(static_cast<unsigned char>(k[0])))) {
        hint =
            " (inside { } a comma ends the value: quote a value that has commas, e.g. "
            "shard: \"((2, 4), (4, 1))\", or write the mapping as indented lines)";
      }
      src.Fail(key, "unknown key '" + k + "' in " + what_ + DidYouMean(k, allowed_) +
                        "; allowed keys: " + Join(allowed_) + hint);
    }
    fields_.push_back({k, key, it->second});
  }
}

const Field* Map::Find(const std::string& key) const {
  for (const Field& f : fields_) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

const YAML::Node& Map::Require(const std::string& key) const {
  const Field* f = Find(key);
  if (f == nullptr) src_.Fail(node_, what_ + " is missing the required key '" + key + "'");
  return f->value;
}

std::string ReadString(const Source& src, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) src.Fail(node, what + " must be a string, found " + Describe(node));
  return node.Scalar();
}

int64_t ReadInt(const Source& src, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) src.Fail(node, what + " must be an integer, found " + Describe(node));
  const std::string text = node.Scalar();
  int64_t product = 1;
  size_t start = 0;
  int factors = 0;
  while (true) {
    const size_t star = text.find('*', start);
    const std::string part =
        Trim(text.substr(start, star == std::string::npos ? std::string::npos : star - start));
    int64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() ||
        (factors > 0 && v < 0) || (star != std::string::npos && v < 0)) {
      src.Fail(node, what + " must be an integer (or a product such as 16 * 5 * 5), found '" +
                         text + "'");
    }
    // Magnitudes through CheckedMul (only the first factor may be negative).
    const auto magnitude = v == std::numeric_limits<int64_t>::min()
                               ? std::nullopt
                               : CheckedMul(product < 0 ? -product : product, v < 0 ? -v : v);
    if (!magnitude) src.Fail(node, what + " is too large for 63 bits: '" + text + "'");
    product = (product < 0) != (v < 0) ? -*magnitude : *magnitude;
    ++factors;
    if (star == std::string::npos) break;
    start = star + 1;
  }
  return product;
}

int64_t ReadPositive(const Source& src, const YAML::Node& node, const std::string& what) {
  const int64_t v = ReadInt(src, node, what);
  if (v <= 0) {
    src.Fail(node, what + " must be a positive integer, found " + std::to_string(v));
  }
  return v;
}

int64_t ReadNonNegative(const Source& src, const YAML::Node& node, const std::string& what) {
  const int64_t v = ReadInt(src, node, what);
  if (v < 0) src.Fail(node, what + " must not be negative, found " + std::to_string(v));
  return v;
}

double ReadFloat(const Source& src, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) src.Fail(node, what + " must be a number, found " + Describe(node));
  const std::string text = Trim(node.Scalar());
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    src.Fail(node, what + " must be a number, found '" + node.Scalar() + "'");
  }
  return v;
}

bool ReadBool(const Source& src, const YAML::Node& node, const std::string& what) {
  if (node.IsScalar()) {
    const std::string v = Lower(Trim(node.Scalar()));
    if (v == "true" || v == "yes") return true;
    if (v == "false" || v == "no") return false;
  }
  src.Fail(node, what + " must be true or false, found " + Describe(node));
}

Shape ReadShape(const Source& src, const YAML::Node& node, const std::string& what,
                bool allow_infer) {
  if (!node.IsSequence()) {
    src.Fail(node, what + " must be a list of sizes such as [1, 28, 28], found " + Describe(node));
  }
  Shape shape;
  bool inferred = false;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string elem = what + ", entry " + std::to_string(i + 1) + ",";
    const int64_t v = ReadInt(src, node[i], elem);
    if (allow_infer && v == -1 && !inferred) {
      inferred = true;
    } else if (v <= 0) {
      src.Fail(node[i], what + ": size " + std::to_string(v) + " (entry " + std::to_string(i + 1) +
                            ") must be positive" +
                            (allow_infer ? " (or -1, once, to infer it)" : ""));
    }
    shape.push_back(v);
  }
  // An inferred (-1) entry is checked as 1 here, its real size where the shape is used.
  Shape known = shape;
  for (int64_t& d : known) d = d == -1 ? 1 : d;
  Status size = CheckTensorSize(known, sizeof(float), what);
  if (!size.ok()) src.Fail(node, size.message());
  return shape;
}

std::vector<int64_t> ReadIntOrPair(const Source& src, const YAML::Node& node,
                                   const std::string& what) {
  if (node.IsSequence()) {
    if (node.size() != 2) {
      src.Fail(node, what + " must be one integer or a pair [height, width], found " +
                         std::to_string(node.size()) + " entries");
    }
    return {ReadPositive(src, node[0], what), ReadPositive(src, node[1], what)};
  }
  const int64_t v = ReadPositive(src, node, what);
  return {v, v};
}

InitSpec ReadInit(const Source& src, const YAML::Node& node, const std::string& what) {
  static const char* kKnown =
      "normal, normal(sigma), truncated_normal(sigma), uniform(scale), xavier_uniform, "
      "he_normal, fan_in_uniform, zeros, ones";
  const std::string text = Trim(ReadString(src, node, what));
  std::string name = text, arg;
  const size_t open = text.find('(');
  if (open != std::string::npos) {
    if (text.back() != ')') {
      src.Fail(node, what + ": '" + text + "' is missing its closing ')'");
    }
    name = Trim(text.substr(0, open));
    arg = Trim(text.substr(open + 1, text.size() - open - 2));
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      const std::string kw = Trim(arg.substr(0, eq));
      if (kw != "sigma" && kw != "scale") {
        src.Fail(node, what + ": unknown argument '" + kw + "' in '" + text +
                           "' (the argument is sigma or scale)");
      }
      arg = Trim(arg.substr(eq + 1));
    }
  }
  std::string key;
  for (char c : Lower(name)) {
    if (c != '_') key += c;
  }
  // Optional prefixes as written in Python: initializer module paths.
  for (const char* prefix : {"mindspore.common.initializer.", "initializer."}) {
    const std::string p = prefix;
    if (key.rfind(p, 0) == 0) key = key.substr(p.size());
  }
  InitSpec spec;
  bool takes_arg = true;
  if (key == "normal") {
    spec = {InitSpec::kNormal, 0.01f};
  } else if (key == "truncatednormal") {
    spec = {InitSpec::kTruncatedNormal, 0.01f};
  } else if (key == "uniform") {
    spec = {InitSpec::kUniform, 0.07f};
  } else if (key == "xavieruniform") {
    spec = {InitSpec::kXavierUniform, 1.0f};
    takes_arg = false;
  } else if (key == "henormal") {
    spec = {InitSpec::kHeNormal, 1.0f};
    takes_arg = false;
  } else if (key == "faninuniform") {
    spec = {InitSpec::kFanInUniform, 1.0f};
    takes_arg = false;
  } else if (key == "zeros" || key == "zero") {
    spec = {InitSpec::kZeros, 0.0f};
    takes_arg = false;
  } else if (key == "ones" || key == "one") {
    spec = {InitSpec::kOnes, 1.0f};
    takes_arg = false;
  } else {
    src.Fail(node, what + ": unknown initializer '" + name + "'; known: " + kKnown);
  }
  if (open != std::string::npos) {
    if (!takes_arg) {
      if (!arg.empty()) {
        src.Fail(node,
                 what + ": initializer '" + name + "' takes no argument, found '" + text + "'");
      }
    } else if (!arg.empty()) {
      char* end = nullptr;
      const float v = std::strtof(arg.c_str(), &end);
      if (end != arg.c_str() + arg.size() || !std::isfinite(v) || v <= 0.0f) {
        src.Fail(node, what + ": the argument of '" + name +
                           "' must be a positive number, found '" + arg + "'");
      }
      spec.scale = v;
    }
  }
  return spec;
}

Padding ReadPadMode(const Source& src, const YAML::Node& node, const std::string& what) {
  const std::string v = Lower(Trim(ReadString(src, node, what)));
  if (v == "valid") return Padding::kValid;
  if (v == "same") return Padding::kSame;
  if (v == "pad") {
    src.Fail(node, what + ": 'pad' (explicit padding) is not supported; use valid or same");
  }
  src.Fail(node, what + " must be valid or same, found '" + node.Scalar() + "'");
}

}  // namespace shardscope::model_file

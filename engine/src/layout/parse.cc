// Parsers of the mesh and layout notations (see mesh.h and layout.h for the grammars).
//
// All three share one tokenizer. Errors read
//   <what> '<text>', column <c>: expected <what was expected>, found <token>
// with 1-based columns counted in bytes.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"

namespace shardscope {

namespace {

enum class Tok { kIdent, kInt, kString, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;   // identifier, string contents, or the punctuation character
  int64_t value = 0;  // kInt
  int column = 1;     // 1-based
};

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kIdent:
      return "'" + t.text + "'";
    case Tok::kInt:
      return "number " + t.text;
    case Tok::kString:
      return "string \"" + t.text + "\"";
    case Tok::kPunct:
      return "'" + t.text + "'";
    case Tok::kEnd:
      break;
  }
  return "end of input";
}

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Parser {
 public:
  Parser(std::string what, std::string_view text) : what_(std::move(what)), text_(text) {}

  // Splits the text into tokens; fails on a character no notation uses or a bad literal.
  Status Tokenize() {
    size_t i = 0;
    while (true) {
      while (i < text_.size() && IsSpace(text_[i])) ++i;
      Token t;
      t.column = static_cast<int>(i) + 1;
      if (i == text_.size()) {
        tokens_.push_back(t);
        return Status::Ok();
      }
      const char c = text_[i];
      if (IsIdentStart(c)) {
        size_t j = i;
        while (j < text_.size() && (IsIdentStart(text_[j]) || IsDigit(text_[j]))) ++j;
        t.kind = Tok::kIdent;
        t.text = std::string(text_.substr(i, j - i));
        i = j;
      } else if (IsDigit(c)) {
        size_t j = i;
        int64_t value = 0;
        while (j < text_.size() && IsDigit(text_[j])) {
          if (value > (int64_t{1} << 50)) return ErrorAt(t.column, "number is too large");
          value = value * 10 + (text_[j] - '0');
          ++j;
        }
        if (j < text_.size() && IsIdentStart(text_[j])) {
          return ErrorAt(static_cast<int>(j) + 1, "expected a digit, ',' or a bracket, found '" +
                                                      std::string(1, text_[j]) + "'");
        }
        t.kind = Tok::kInt;
        t.text = std::string(text_.substr(i, j - i));
        t.value = value;
        i = j;
      } else if (c == '"' || c == '\'') {
        const size_t close = text_.find(c, i + 1);
        if (close == std::string_view::npos) {
          return ErrorAt(t.column, std::string("unterminated string: expected a closing ") + c);
        }
        t.kind = Tok::kString;
        t.text = std::string(text_.substr(i + 1, close - i - 1));
        i = close + 1;
      } else if (std::string_view("()[],=|-.").find(c) != std::string_view::npos) {
        t.kind = Tok::kPunct;
        t.text = std::string(1, c);
        ++i;
      } else {
        return ErrorAt(t.column, "unexpected character '" + std::string(1, c) + "'");
      }
      tokens_.push_back(std::move(t));
    }
  }

  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  Token Next() {
    Token t = Peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool AtPunct(char c, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == Tok::kPunct && t.text[0] == c;
  }
  bool AtOpen() const { return AtPunct('(') || AtPunct('['); }
  // Consumes `c` if it is next.
  bool Accept(char c) {
    if (!AtPunct(c)) return false;
    Next();
    return true;
  }
  Status Expect(char c, const std::string& expected) {
    if (Accept(c)) return Status::Ok();
    return Error(expected);
  }
  Status ExpectEnd() {
    if (Peek().kind == Tok::kEnd) return Status::Ok();
    return Error("end of input");
  }

  // "expected <expected>, found <next token>" at the next token.
  Status Error(const std::string& expected) const { return ErrorAt(Peek(), expected); }
  Status ErrorAt(const Token& t, const std::string& expected) const {
    return ErrorAt(t.column, "expected " + expected + ", found " + Describe(t));
  }
  Status ErrorAt(int column, const std::string& message) const {
    return Status::Invalid(what_ + " '" + std::string(text_) + "', column " +
                           std::to_string(column) + ": " + message);
  }
  Status Context(const Status& status) const {
    return status.WithContext(what_ + " '" + std::string(text_) + "'");
  }

  // A sequence of items in () or [] with ',' separators and an optional trailing comma, or
  // a single bare item. `item` parses one element.
  template <typename F>
  Status ParseTupleOr1(const std::string& element, F item) {
    if (!AtOpen()) return item();
    const char close = Next().text[0] == '(' ? ')' : ']';
    const std::string closing = std::string("'") + close + "'";
    while (!Accept(close)) {
      SHARDSCOPE_RETURN_IF_ERROR(item());
      if (Accept(close)) break;
      SHARDSCOPE_RETURN_IF_ERROR(Expect(',', "',' or " + closing + " after " + element));
    }
    return Status::Ok();
  }

  Status ParseIntTuple(const std::string& element, std::vector<int64_t>* out) {
    return ParseTupleOr1(element, [&]() -> Status {
      const bool negative = Accept('-');
      if (Peek().kind != Tok::kInt) return Error(element);
      const int64_t v = Next().value;
      out->push_back(negative ? -v : v);
      return Status::Ok();
    });
  }

  Status ParseStringTuple(const std::string& element, std::vector<std::string>* out) {
    return ParseTupleOr1(element, [&]() -> Status {
      if (Peek().kind != Tok::kString) return Error(element);
      out->push_back(Next().text);
      return Status::Ok();
    });
  }

  // An axis name (quoted or bare) that must exist in `mesh` and not be in `used`; appends
  // its index to `axes` and records it in `used` with `owner`.
  Status ParseAxis(const DeviceMesh& mesh, bool allow_bare, int owner, std::vector<int>* used,
                   std::vector<int>* axes) {
    const Token& t = Peek();
    if (t.kind != Tok::kString && !(allow_bare && t.kind == Tok::kIdent)) {
      return Error("a mesh axis name");
    }
    if (t.text == "None") {
      return ErrorAt(t.column,
                     "'None' cannot be one of several axes of a dimension; write it "
                     "alone to leave the dimension unsplit");
    }
    Result<int> axis = mesh.axis_index(t.text);
    if (!axis.ok()) return ErrorAt(t.column, axis.status().message());
    const int a = *axis;
    if ((*used)[a] != kFree) {
      const int prev = (*used)[a];
      return ErrorAt(t.column,
                     "mesh axis '" + t.text + "' is used twice (already " +
                         (prev == kPartialOwner ? std::string("partial")
                                                : "used by dimension " + std::to_string(prev)) +
                         ")");
    }
    (*used)[a] = owner;
    axes->push_back(a);
    Next();
    return Status::Ok();
  }

  static constexpr int kFree = -1;
  static constexpr int kPartialOwner = -2;

 private:
  std::string what_;
  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

enum class MeshArg { kShape, kNames, kRanks };

}  // namespace

Result<DeviceMesh> ParseMeshExpr(std::string_view text) {
  Parser p("mesh expression", text);
  SHARDSCOPE_RETURN_IF_ERROR(p.Tokenize());
  // Callee: [module '.']* (Layout | DeviceMesh).
  Token callee = p.Peek();
  if (callee.kind != Tok::kIdent) return p.Error("'Layout('");
  p.Next();
  while (p.AtPunct('.')) {
    p.Next();
    if (p.Peek().kind != Tok::kIdent) return p.Error("a name after '.'");
    callee = p.Next();
  }
  if (callee.text != "Layout" && callee.text != "DeviceMesh") {
    return p.ErrorAt(callee, "'Layout(' or 'DeviceMesh('");
  }
  SHARDSCOPE_RETURN_IF_ERROR(p.Expect('(', "'(' after '" + callee.text + "'"));

  std::optional<std::vector<int64_t>> shape;
  std::optional<std::vector<std::string>> names;
  std::optional<std::vector<int64_t>> ranks;
  int positional = 0;
  bool seen_keyword = false;
  while (!p.Accept(')')) {
    MeshArg arg;
    const Token start = p.Peek();
    if (start.kind == Tok::kIdent && p.AtPunct('=', 1)) {
      if (start.text == "device_matrix") {
        arg = MeshArg::kShape;
      } else if (start.text == "alias_name" || start.text == "name" || start.text == "names") {
        arg = MeshArg::kNames;
      } else if (start.text == "rank_list" || start.text == "ranks") {
        arg = MeshArg::kRanks;
      } else {
        return p.ErrorAt(start,
                         "a keyword argument device_matrix, alias_name (or name), or "
                         "rank_list");
      }
      p.Next();
      p.Next();
      seen_keyword = true;
    } else {
      if (seen_keyword) return p.ErrorAt(start, "a keyword argument (after a keyword argument)");
      if (positional == 3) return p.ErrorAt(start, "')' (at most 3 arguments)");
      arg = static_cast<MeshArg>(positional++);
    }
    switch (arg) {
      case MeshArg::kShape:
        if (shape) return p.ErrorAt(start, "each argument once; the mesh shape is given twice");
        shape.emplace();
        SHARDSCOPE_RETURN_IF_ERROR(p.ParseIntTuple("a mesh axis size", &*shape));
        break;
      case MeshArg::kNames:
        if (names) return p.ErrorAt(start, "each argument once; the axis names are given twice");
        names.emplace();
        SHARDSCOPE_RETURN_IF_ERROR(p.ParseStringTuple("a quoted mesh axis name", &*names));
        break;
      case MeshArg::kRanks:
        if (ranks) return p.ErrorAt(start, "each argument once; the rank list is given twice");
        ranks.emplace();
        if (p.Peek().kind == Tok::kIdent && p.Peek().text == "None") {
          p.Next();
        } else {
          SHARDSCOPE_RETURN_IF_ERROR(p.ParseIntTuple("a rank", &*ranks));
        }
        break;
    }
    if (p.Accept(')')) break;
    SHARDSCOPE_RETURN_IF_ERROR(p.Expect(',', "',' or ')' after an argument"));
  }
  SHARDSCOPE_RETURN_IF_ERROR(p.ExpectEnd());
  if (!shape) return p.ErrorAt(p.Peek().column, "missing the mesh shape (device_matrix)");
  if (!names) return p.ErrorAt(p.Peek().column, "missing the mesh axis names (alias_name)");
  std::vector<int> rank_list;
  if (ranks) {
    for (int64_t r : *ranks) {
      if (r < INT32_MIN || r > INT32_MAX) {
        return p.Context(Status::Invalid("rank " + std::to_string(r) + " is out of range"));
      }
      rank_list.push_back(static_cast<int>(r));
    }
  }
  Result<DeviceMesh> mesh = DeviceMesh::Create(*shape, *names, rank_list);
  if (!mesh.ok()) return p.Context(mesh.status());
  return mesh;
}

Result<DeviceMesh> ParseMeshSpec(std::string_view text) {
  Parser p("mesh", text);
  SHARDSCOPE_RETURN_IF_ERROR(p.Tokenize());
  bool wrapped = false;
  if (p.Peek().kind == Tok::kIdent && p.Peek().text == "mesh" && p.AtPunct('(', 1)) {
    p.Next();
    p.Next();
    wrapped = true;
  }
  Shape shape;
  std::vector<std::string> names;
  std::vector<int64_t> ranks;
  bool have_ranks = false;
  const char stop = wrapped ? ')' : '\0';
  auto at_stop = [&]() { return wrapped ? p.AtPunct(stop) : p.Peek().kind == Tok::kEnd; };
  while (!at_stop()) {
    if (have_ranks) return p.Error(wrapped ? "')' after the rank list" : "end after the rank list");
    const Token name = p.Peek();
    if (name.kind != Tok::kIdent) return p.Error("an axis name (as in dp=2)");
    p.Next();
    SHARDSCOPE_RETURN_IF_ERROR(p.Expect('=', "'=' after '" + name.text + "'"));
    if (name.text == "ranks" && p.AtOpen()) {
      SHARDSCOPE_RETURN_IF_ERROR(p.ParseIntTuple("a rank", &ranks));
      have_ranks = true;
    } else {
      if (p.Peek().kind != Tok::kInt) return p.Error("the size of axis '" + name.text + "'");
      names.push_back(name.text);
      shape.push_back(p.Next().value);
    }
    if (at_stop()) break;
    SHARDSCOPE_RETURN_IF_ERROR(
        p.Expect(',', wrapped ? "',' or ')' after an axis" : "',' or end after an axis"));
  }
  if (wrapped) p.Next();
  SHARDSCOPE_RETURN_IF_ERROR(p.ExpectEnd());
  std::vector<int> rank_list;
  for (int64_t r : ranks) {
    if (r > INT32_MAX) {
      return p.Context(Status::Invalid("rank " + std::to_string(r) + " is out of range"));
    }
    rank_list.push_back(static_cast<int>(r));
  }
  Result<DeviceMesh> mesh = DeviceMesh::Create(shape, names, rank_list);
  if (!mesh.ok()) return p.Context(mesh.status());
  return mesh;
}

Result<DimAxes> ParseLayoutCall(std::string_view text, const DeviceMesh& mesh) {
  Parser p("layout", text);
  SHARDSCOPE_RETURN_IF_ERROR(p.Tokenize());
  if (p.Peek().kind != Tok::kIdent)
    return p.Error("a layout call such as layout(\"mp\", \"None\")");
  const Token callee = p.Next();
  SHARDSCOPE_RETURN_IF_ERROR(p.Expect('(', "'(' after '" + callee.text + "'"));
  DimAxes dims;
  std::vector<int> used(mesh.num_axes(), Parser::kFree);
  while (!p.Accept(')')) {
    const int dim = static_cast<int>(dims.size());
    std::vector<int> axes;
    const Token& t = p.Peek();
    if ((t.kind == Tok::kString || t.kind == Tok::kIdent) && t.text == "None") {
      p.Next();
    } else if (t.kind == Tok::kString || t.kind == Tok::kIdent) {
      SHARDSCOPE_RETURN_IF_ERROR(p.ParseAxis(mesh, /*allow_bare=*/true, dim, &used, &axes));
    } else if (p.AtOpen()) {
      SHARDSCOPE_RETURN_IF_ERROR(p.ParseTupleOr1("a mesh axis name", [&]() -> Status {
        return p.ParseAxis(mesh, /*allow_bare=*/true, dim, &used, &axes);
      }));
    } else {
      return p.Error("a mesh axis name, \"None\" or a tuple of axis names for dimension " +
                     std::to_string(dim));
    }
    dims.push_back(std::move(axes));
    if (p.Accept(')')) break;
    SHARDSCOPE_RETURN_IF_ERROR(p.Expect(',', "',' or ')' after dimension " + std::to_string(dim)));
  }
  SHARDSCOPE_RETURN_IF_ERROR(p.ExpectEnd());
  return dims;
}

Result<Layout> ParseLayoutSpec(std::string_view text, const DeviceMesh& mesh, const Shape& shape) {
  Parser p("layout spec", text);
  SHARDSCOPE_RETURN_IF_ERROR(p.Tokenize());
  DimAxes dims;
  std::vector<int> partial;
  std::vector<int> used(mesh.num_axes(), Parser::kFree);
  auto is_name = [&](const Token& t) { return t.kind == Tok::kIdent || t.kind == Tok::kString; };
  if (p.Peek().kind != Tok::kEnd && !p.AtPunct('|')) {
    while (true) {
      const int dim = static_cast<int>(dims.size());
      std::vector<int> axes;
      const Token& t = p.Peek();
      if (p.AtPunct('-') || (is_name(t) && t.text == "None")) {
        p.Next();
      } else if (is_name(t)) {
        // axis, or axis.axis... (the printed form of a multi-axis dimension)
        SHARDSCOPE_RETURN_IF_ERROR(p.ParseAxis(mesh, true, dim, &used, &axes));
        while (p.Accept('.')) {
          SHARDSCOPE_RETURN_IF_ERROR(p.ParseAxis(mesh, true, dim, &used, &axes));
        }
      } else if (p.AtOpen()) {
        const char close = p.Next().text[0] == '(' ? ')' : ']';
        while (true) {
          SHARDSCOPE_RETURN_IF_ERROR(p.ParseAxis(mesh, true, dim, &used, &axes));
          if (p.Accept(close)) break;
          SHARDSCOPE_RETURN_IF_ERROR(
              p.Expect(',', std::string("',' or '") + close + "' after a mesh axis name"));
        }
      } else {
        return p.Error("a mesh axis name, '-' or '(' for dimension " + std::to_string(dim));
      }
      dims.push_back(std::move(axes));
      if (p.Accept(',')) continue;
      if (p.AtPunct('|') || p.Peek().kind == Tok::kEnd) break;
      return p.Error("',' or '|P(' or end after dimension " + std::to_string(dim));
    }
  }
  if (p.Accept('|')) {
    const Token& t = p.Peek();
    if (t.kind != Tok::kIdent || t.text != "P") return p.Error("'P(' after '|'");
    p.Next();
    SHARDSCOPE_RETURN_IF_ERROR(p.Expect('(', "'(' after 'P'"));
    while (true) {
      SHARDSCOPE_RETURN_IF_ERROR(p.ParseAxis(mesh, true, Parser::kPartialOwner, &used, &partial));
      if (p.Accept(')')) break;
      SHARDSCOPE_RETURN_IF_ERROR(p.Expect(',', "',' or ')' after a partial axis"));
    }
  }
  SHARDSCOPE_RETURN_IF_ERROR(p.ExpectEnd());
  if (dims.size() != shape.size()) {
    return p.Context(Status::Invalid("the spec has " + std::to_string(dims.size()) +
                                     " dimensions but the tensor shape " + ShapeToString(shape) +
                                     " has " + std::to_string(shape.size())));
  }
  Result<Layout> layout = Layout::Create(mesh, std::move(dims), std::move(partial), shape);
  if (!layout.ok()) return p.Context(layout.status());
  return layout;
}

}  // namespace shardscope

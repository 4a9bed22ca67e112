// Internal: thin RAII wrappers over the SQLite C API and the mapping of its errors to
// store::Status. Not installed; used by the writer, the reader and the tests.
#pragma once

#include <sqlite3.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "shardscope/store/status.h"

namespace shardscope::store::internal {

// "<path>: <what>: <SQLite's message> [<errno text>]", with the StatusCode SQLite's result
// code maps to (SQLITE_FULL -> kDiskFull, SQLITE_CORRUPT -> kCorrupt, ...).
Status SqliteError(sqlite3* db, int rc, const std::string& path, std::string_view what);
// The same without a connection (sqlite3_errstr).
Status SqliteCodeError(int rc, const std::string& path, std::string_view what);

// An id column whose kNone (-1) is NULL, for Stmt::BindRow (RefId{o.mesh_id}) and Stmt::ReadRow.
template <typename Id>
struct RefId {
  Id& id;
};
template <typename Id>
RefId(Id&) -> RefId<Id>;

// A prepared statement. Bind* take 1-based parameter indices, column getters 0-based ones.
// Text is bound without a copy (SQLITE_STATIC): the bound string must outlive the Step().
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Returns the SQLite result code.
  int Prepare(sqlite3* db, std::string_view sql) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    return sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  }
  bool valid() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

  void BindInt(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void BindBool(int i, bool v) { sqlite3_bind_int(stmt_, i, v ? 1 : 0); }
  // NaN is stored as NULL (SQLite does so anyway) and read back as NaN.
  void BindDouble(int i, double v) {
    if (std::isnan(v)) {
      sqlite3_bind_null(stmt_, i);
    } else {
      sqlite3_bind_double(stmt_, i, v);
    }
  }
  // An empty view may have a null data(), which SQLite would bind as NULL: bind "" instead.
  void BindText(int i, std::string_view v) {
    sqlite3_bind_text64(stmt_, i, v.data() != nullptr ? v.data() : "", v.size(), SQLITE_STATIC,
                        SQLITE_UTF8);
  }
  // kNone (-1) -> NULL.
  void BindRef(int i, int64_t id) {
    if (id < 0) {
      sqlite3_bind_null(stmt_, i);
    } else {
      sqlite3_bind_int64(stmt_, i, id);
    }
  }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }

  // Binds parameters 1, 2, ... to `values` by type: integers, bool, floating point, text, RefId.
  // Text is not copied: a temporary std::string is refused at compile time.
  template <typename... T>
  void BindRow(T&&... values) {
    static_assert(((!std::is_same_v<std::remove_cvref_t<T>, std::string> ||
                    std::is_lvalue_reference_v<T>)&&...),
                  "BindRow: bind a named string, not a temporary (SQLite keeps a pointer)");
    int i = 0;
    (Bind(++i, values), ...);
  }
  // Reads columns first, first + 1, ... into `out` by type (as Int, Bool, Double, Text, Ref for a
  // RefId).
  template <typename... T>
  void ReadRow(int first, T&&... out) const {
    int col = first;
    (Read(col++, out), ...);
  }

  int Step() { return sqlite3_step(stmt_); }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    mistyped_ = -1;
  }

  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) const {
    CheckNumber(col);
    return sqlite3_column_int64(stmt_, col);
  }
  bool Bool(int col) const { return Int(col) != 0; }
  // NULL -> kNone.
  int64_t Ref(int col) const { return IsNull(col) ? int64_t{-1} : Int(col); }
  // NULL -> NaN.
  double Double(int col) const {
    if (IsNull(col)) return std::nan("");
    CheckNumber(col);
    return sqlite3_column_double(stmt_, col);
  }
  // The last column read as a number that held text or a blob (SQLite reads those as 0; a
  // damaged or hand-edited file), or -1; Reset() clears it. Readers report it as damage.
  int mistyped_column() const { return mistyped_; }
  std::string ColumnName(int col) const {
    const char* name = sqlite3_column_name(stmt_, col);
    return name != nullptr ? name : "#" + std::to_string(col);
  }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    if (p == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  // Integers and bool by exact type (a pointer must not convert to bool).
  template <std::integral I>
  void Bind(int i, I v) {
    if constexpr (std::is_same_v<I, bool>) {
      BindBool(i, v);
    } else {
      BindInt(i, static_cast<int64_t>(v));
    }
  }
  void Bind(int i, double v) { BindDouble(i, v); }
  void Bind(int i, std::string_view v) { BindText(i, v); }
  void Bind(int i, const char* v) { BindText(i, v); }
  template <typename Id>
  void Bind(int i, RefId<Id> r) {
    BindRef(i, r.id);
  }

  void Read(int col, bool& v) const { v = Bool(col); }
  template <std::integral I>
  void Read(int col, I& v) const {
    v = static_cast<I>(Int(col));
  }
  template <std::floating_point F>
  void Read(int col, F& v) const {
    v = static_cast<F>(Double(col));
  }
  void Read(int col, std::string& v) const { v = Text(col); }
  void Read(int col, RefId<int64_t> r) const { r.id = Ref(col); }

  void CheckNumber(int col) const {
    const int type = sqlite3_column_type(stmt_, col);
    if (type == SQLITE_TEXT || type == SQLITE_BLOB) mistyped_ = col;
  }

  sqlite3_stmt* stmt_ = nullptr;
  mutable int mistyped_ = -1;
};

// Resets a statement when it goes out of scope (ends its read transaction).
class StmtUse {
 public:
  explicit StmtUse(Stmt& stmt) : stmt_(stmt) {}
  ~StmtUse() { stmt_.Reset(); }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;

 private:
  Stmt& stmt_;
};

// Runs one SQL statement without results (the schema, pragmas) through a prepared
// statement; the returned Status names `path` and `what`.
Status Exec(sqlite3* db, std::string_view sql, const std::string& path, std::string_view what);

// Runs `sql` and returns the first column of its first row as an integer (PRAGMAs).
Result<int64_t> QueryInt(sqlite3* db, std::string_view sql, const std::string& path,
                         std::string_view what);

// Checkpoints the log into the file and switches it back to a rollback journal, retrying for
// up to `seconds` while other connections (readers) keep the switch from happening. Ok once
// the file is out of WAL mode; kLocked naming the wait when readers stayed connected.
Status LeaveWalMode(sqlite3* db, const std::string& path, double seconds);

}  // namespace shardscope::store::internal

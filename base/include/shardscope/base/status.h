// Status and Result<T>: how every library (engine, store, viewer) reports failure.
//
// No exception crosses a library boundary. A function that can fail on bad input returns a
// Status (or Result<T>) whose message names the context: the file, operator or value and
// the rule that was broken. Asserts are only for programming errors.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace shardscope {

// What went wrong, for callers that act on the kind of failure (exit codes, retries).
enum class StatusCode {
  kOk = 0,
  kInvalidInput,    // bad input from the caller (a model file, a notation, a record)
  kNotFound,        // a file, name or entry that does not exist
  kIoError,         // any other I/O failure
  kNotImplemented,  // a valid request this build cannot serve yet
  kInternal,        // a bug (please report)
  kAlreadyExists,   // creating a run file that exists, without overwrite
  kLocked,          // another run is writing this file
  kReadOnly,        // the directory or file cannot be written
  kDiskFull,        // no space left (or less than a run's minimum before it starts)
  kNotARunFile,     // not an SQLite database, or one without the Shardscope application id
  kCorrupt,         // a run file that is damaged or truncated
  kTooNew,          // a run file written by a newer Shardscope
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  static Status Ok() { return Status(); }
  static Status Invalid(std::string msg) {
    return Status(StatusCode::kInvalidInput, std::move(msg));
  }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
  static Status Io(std::string msg) { return Status(StatusCode::kIoError, std::move(msg)); }
  static Status NotImplemented(std::string msg) {
    return Status(StatusCode::kNotImplemented, std::move(msg));
  }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "context: message".
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result constructed from an OK status without a value");
    if (status_.ok()) status_ = Status::Internal("Result without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace shardscope

// Early return of a failed Status from an expression yielding Status.
#define SHARDSCOPE_RETURN_IF_ERROR(expr) \
  do {                                   \
    ::shardscope::Status _st = (expr);   \
    if (!_st.ok()) return _st;           \
  } while (0)

#define SHARDSCOPE_CONCAT_INNER(a, b) a##b
#define SHARDSCOPE_CONCAT(a, b) SHARDSCOPE_CONCAT_INNER(a, b)
// `SHARDSCOPE_ASSIGN_OR_RETURN(auto x, MakeX());` unwraps a Result or returns its Status.
#define SHARDSCOPE_ASSIGN_OR_RETURN(decl, expr)         \
  auto SHARDSCOPE_CONCAT(_res_, __LINE__) = (expr);     \
  if (!SHARDSCOPE_CONCAT(_res_, __LINE__).ok())         \
    return SHARDSCOPE_CONCAT(_res_, __LINE__).status(); \
  decl = std::move(SHARDSCOPE_CONCAT(_res_, __LINE__)).value()

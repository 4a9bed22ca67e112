// Status and Result<T> of the store library.
//
// The store depends on SQLite only (DESIGN.md §3), so it cannot use the engine's
// shardscope::Status. These two types have the same surface (ok(), message(), status(),
// value(), operator->) so code that uses both reads the same; the engine converts with
// `shardscope::Status::Io(st.message())` or the like. Every message names the run file and
// the reason ("runs/a.db: not a Shardscope run file (...)"). No exception leaves the library.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace shardscope::store {

// What went wrong, for callers that act on the kind of failure (the exit code: IsBadInput).
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad input from the caller (empty path, a record that breaks a rule)
  kNotFound,         // the file or directory does not exist
  kAlreadyExists,    // Create() on an existing run file without Options::overwrite
  kLocked,           // another run is writing this file
  kReadOnly,         // the directory or file cannot be written
  kDiskFull,         // no space left (or less than Options::min_free_bytes before a run)
  kIo,               // any other I/O failure
  kNotARunFile,      // not an SQLite database, or one without the Shardscope application id
  kCorrupt,          // a run file that is damaged or truncated
  kTooNew,           // written by a newer Shardscope (schema version above kSchemaVersion)
  kInternal,         // a bug in the store (please report)
};
const char* ErrorCodeName(ErrorCode code);
// The input was at fault (exit code 2): kNotFound, kNotARunFile, kCorrupt, kTooNew,
// kInvalidArgument. Anything else is a failure of the run or the machine (exit code 1).
bool IsBadInput(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// A value, or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "Result constructed from an OK status without a value");
    if (status_.ok()) status_ = Status(ErrorCode::kInternal, "Result without a value");
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

}  // namespace shardscope::store

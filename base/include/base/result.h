// Errors as values at module edges (Orbit's ErrorMessageOr): a call that can fail for a reason its caller
// should show returns Result<T> (a value, or one readable line) or Status (nothing, or that line). Every
// module uses these at its public edge; exceptions stay only where they are a module's stated contract (the
// engine's Session constructor, LibTorch's own errors). [[nodiscard]]: a failure cannot be dropped silently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tb {

struct Error {
  std::string message;       // one line, no trailing newline, e.g. "not a trace: expected '{' or '['"
  int64_t byte_offset = -1;  // offset into the (decompressed) input where known (parse errors), -1 otherwise
  // "message (at byte N)" or just the message.
  std::string to_string() const {
    return byte_offset >= 0 ? message + " (at byte " + std::to_string(byte_offset) + ")" : message;
  }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// A Result with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT
  static Status Ok() { return {}; }
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

}  // namespace tb

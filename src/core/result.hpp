// SPDX-License-Identifier: GPL-2.0-or-later
// result.hpp - a value or an error, and success or an error.
//
// Every core module reports failures as values of its own error type
// (profile's Error, auth's Error, swf's Error, AvailabilityError); these two
// templates carry them.  Each module names its instances, e.g.
//   template <typename T> using Result = BasicResult<T, Error>;
//   using Status = BasicStatus<Error>;
// value() on an error (or error() on a value) is a programming error of the
// caller and throws std::bad_variant_access / std::bad_optional_access,
// never a run-time condition.

#ifndef FLEXCO_CORE_RESULT_HPP
#define FLEXCO_CORE_RESULT_HPP

#include <optional>
#include <utility>
#include <variant>

namespace flexco {

template <typename T, typename E>
class [[nodiscard]] BasicResult {
 public:
  BasicResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  BasicResult(E error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T value_or(T fallback) const& { return ok() ? std::get<0>(v_) : fallback; }

  const E& error() const& { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

template <typename E>
class [[nodiscard]] BasicStatus {
 public:
  BasicStatus() = default;
  BasicStatus(E error) : error_(std::move(error)) {}

  bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const E& error() const { return error_.value(); }

 private:
  std::optional<E> error_;
};

}  // namespace flexco

#endif

// Expected<T, E>: a value or an error reason, for code that must not throw on
// hostile input. A small stand-in for C++23 std::expected.
#pragma once

#include <cassert>
#include <utility>
#include <variant>

namespace uroce {

template <typename E>
struct Unexpected {
  E error;
};

template <typename E>
Unexpected<E> unexpected(E error) {
  return Unexpected<E>{error};
}

template <typename T, typename E>
class Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  // The value built where it will stay, from args (none: default-built), so
  // that a large value is filled in place and never copied.
  template <typename... Args>
  explicit Expected(std::in_place_t, Args&&... args) : state_(std::in_place_index<0>, std::forward<Args>(args)...) {}
  Expected(Unexpected<E> failure) : state_(std::in_place_index<1>, failure.error) {}

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  const T& value() const& {
    assert(has_value());
    return std::get<0>(state_);
  }
  T& value() & {
    assert(has_value());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(state_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  E error() const {
    assert(!has_value());
    return std::get<1>(state_);
  }

 private:
  std::variant<T, E> state_;
};

}  // namespace uroce

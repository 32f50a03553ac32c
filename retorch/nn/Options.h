// RETORCH_ARG: the chained-setter fields of Options structs (LinearOptions(4, 2).bias(false)).
#pragma once

/// Declares a field `name_` of type T with a chained setter `name(v)` and getters `name()`,
/// like libtorch's TORCH_ARG: `struct FooOptions { RETORCH_ARG(int64_t, size) = 3; };`.
#define RETORCH_ARG(T, name)                                   \
 public:                                                       \
  auto name(const T& new_##name)->decltype(*this) { /* NOLINT */ \
    this->name##_ = new_##name;                                \
    return *this;                                              \
  }                                                            \
  const T& name() const noexcept { return this->name##_; }    \
  T& name() noexcept { return this->name##_; }                \
                                                               \
 private:                                                      \
  T name##_ /* NOLINT */

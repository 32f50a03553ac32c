// ExpandingArray<D>: a per-dimension option given as one value or D values (kernel_size=3).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "retorch/core/ArrayRef.h"
#include "retorch/core/Error.h"

namespace retorch::nn {

/// D values for a D-dimensional option; a single value is repeated (like torch's _pair).
template <size_t D, typename T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(T v) { values_.fill(v); }  // NOLINT: implicit like libtorch
  ExpandingArray(std::initializer_list<T> list) : ExpandingArray(std::vector<T>(list)) {}
  ExpandingArray(const std::vector<T>& v) {  // NOLINT
    RT_CHECK(v.size() == D, "expected ", D, " values for a ", D, "-d option, got ", v.size());
    for (size_t i = 0; i < D; ++i) values_[i] = v[i];
  }
  ArrayRef<T> ref() const { return ArrayRef<T>(values_.data(), D); }
  operator ArrayRef<T>() const { return ref(); }  // NOLINT
  T operator[](size_t i) const { return values_[i]; }
  std::vector<T> vec() const { return std::vector<T>(values_.begin(), values_.end()); }
  const T* data() const { return values_.data(); }
  static constexpr size_t size() { return D; }

 private:
  std::array<T, D> values_{};
};

}  // namespace retorch::nn

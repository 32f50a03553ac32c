// tensor({...}): build a tensor from nested initializer lists or a vector, like torch::tensor.
#pragma once
#include <initializer_list>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch {

/// Values with a shape, collected from (nested) initializer lists.
class TensorData {
 public:
  TensorData(double v) : values_{v}, floating_(true) {}
  TensorData(float v) : values_{double(v)}, floating_(true) {}
  TensorData(int v) : values_{double(v)} {}
  TensorData(int64_t v) : values_{double(v)} {}
  TensorData(bool v) : values_{double(v)}, boolean_(true) {}
  TensorData(std::initializer_list<TensorData> rows);
  TensorData(const std::vector<double>& v);
  TensorData(const std::vector<float>& v);
  TensorData(const std::vector<int64_t>& v);

  const std::vector<double>& values() const { return values_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  /// float32 (default dtype) for floats, int64 for integers, bool for booleans.
  ScalarType inferred_dtype() const;

 private:
  std::vector<double> values_;
  std::vector<int64_t> shape_;
  bool floating_ = false;
  bool boolean_ = false;
};

/// torch::tensor: copies the data into a new tensor.
Tensor tensor(const TensorData& data, TensorOptions options = {});

}  // namespace retorch

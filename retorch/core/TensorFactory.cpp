// tensor({...}) from nested initializer lists.
#include "retorch/core/TensorFactory.h"

#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"

namespace retorch {

TensorData::TensorData(std::initializer_list<TensorData> rows) {
  bool first = true;
  for (const auto& r : rows) {
    if (first) {
      shape_ = r.shape_;
      first = false;
    } else {
      RT_CHECK(r.shape_ == shape_, "tensor(): expected all nested lists to have the same shape "
               "(got ", ArrayRef<int64_t>(shape_), " and ", ArrayRef<int64_t>(r.shape_), ")");
    }
    values_.insert(values_.end(), r.values_.begin(), r.values_.end());
    floating_ |= r.floating_;
    boolean_ = first ? r.boolean_ : (boolean_ && r.boolean_);
  }
  if (rows.size() > 0) boolean_ = std::all_of(rows.begin(), rows.end(), [](const TensorData& r) { return r.boolean_; });
  shape_.insert(shape_.begin(), int64_t(rows.size()));
}

TensorData::TensorData(const std::vector<double>& v) : values_(v), shape_{int64_t(v.size())}, floating_(true) {}
TensorData::TensorData(const std::vector<float>& v)
    : values_(v.begin(), v.end()), shape_{int64_t(v.size())}, floating_(true) {}
TensorData::TensorData(const std::vector<int64_t>& v)
    : values_(v.begin(), v.end()), shape_{int64_t(v.size())} {}

ScalarType TensorData::inferred_dtype() const {
  if (floating_) return default_dtype();
  if (boolean_) return kBool;
  return kLong;
}

Tensor tensor(const TensorData& data, TensorOptions options) {
  ScalarType dt = options.dtype_.value_or(data.inferred_dtype());
  Tensor t = make_empty(data.shape(), dt);
  RT_DISPATCH_ALL(dt, "tensor", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    for (size_t i = 0; i < data.values().size(); ++i)
      p[i] = scalar_t(opmath_t<scalar_t>(data.values()[i]));
  });
  if (options.device_ && !options.device_->is_cpu()) t = t.to(*options.device_);
  if (options.requires_grad_) t.set_requires_grad(true);
  return t;
}

}  // namespace retorch

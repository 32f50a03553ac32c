// IValue accessors and printing.
#include "retorch/dispatch/IValue.h"

namespace retorch {

double IValue::to_double() const {
  if (auto* d = std::get_if<double>(&v_)) return *d;
  if (auto* i = std::get_if<int64_t>(&v_)) return double(*i);
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  RT_ERROR("IValue: expected float but got ", type_name());
}

int64_t IValue::to_int() const {
  if (auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (auto* b = std::get_if<bool>(&v_)) return *b;
  if (auto* t = std::get_if<ScalarType>(&v_)) return int64_t(*t);
  RT_ERROR("IValue: expected int but got ", type_name());
}

Scalar IValue::to_scalar() const {
  if (auto* d = std::get_if<double>(&v_)) return Scalar(*d);
  if (auto* i = std::get_if<int64_t>(&v_)) return Scalar(*i);
  if (auto* b = std::get_if<bool>(&v_)) return Scalar(*b);
  if (auto* t = std::get_if<Tensor>(&v_)) return t->item();
  RT_ERROR("IValue: expected Scalar but got ", type_name());
}

const std::vector<int64_t>& IValue::to_int_list() const {
  if (auto* l = std::get_if<std::vector<int64_t>>(&v_)) return *l;
  RT_ERROR("IValue: expected int[] but got ", type_name());
}

Device IValue::to_device() const {
  if (auto* d = std::get_if<Device>(&v_)) return *d;
  if (auto* s = std::get_if<std::string>(&v_)) return Device(*s);
  RT_ERROR("IValue: expected Device but got ", type_name());
}

ScalarType IValue::to_scalar_type() const {
  if (auto* t = std::get_if<ScalarType>(&v_)) return *t;
  if (auto* i = std::get_if<int64_t>(&v_)) return ScalarType(*i);
  RT_ERROR("IValue: expected ScalarType but got ", type_name());
}

std::string IValue::type_name() const {
  static const char* names[] = {"None",   "Tensor",    "float",    "int",   "bool",
                                "str",    "int[]",     "float[]",  "Tensor[]",
                                "Device", "Generator", "ScalarType", "Tensor?[]"};
  return names[v_.index()];
}

std::ostream& operator<<(std::ostream& os, const IValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) os << "None";
        else if constexpr (std::is_same_v<T, Tensor>) os << x;
        else if constexpr (std::is_same_v<T, bool>) os << (x ? "True" : "False");
        else if constexpr (std::is_same_v<T, Generator>) os << "<Generator>";
        else if constexpr (std::is_same_v<T, std::vector<Tensor>>) os << "[" << x.size() << " tensors]";
        else if constexpr (std::is_same_v<T, std::vector<std::optional<Tensor>>>)
          os << "[" << x.size() << " optional tensors]";
        else os << x;
      },
      v.payload());
  return os;
}

}  // namespace retorch

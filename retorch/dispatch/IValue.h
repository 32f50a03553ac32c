// IValue: a boxed value (tensor, number, list, string, ...) for boxed kernels and the JIT.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch {

class IValue {
 public:
  using Payload = std::variant<std::monostate, Tensor, double, int64_t, bool, std::string,
                               std::vector<int64_t>, std::vector<double>, std::vector<Tensor>,
                               Device, Generator, ScalarType, std::vector<std::optional<Tensor>>>;
  IValue() = default;
  IValue(std::nullopt_t) {}
  IValue(Tensor t) : v_(std::move(t)) {}
  IValue(double d) : v_(d) {}
  IValue(int64_t i) : v_(i) {}
  IValue(int i) : v_(int64_t(i)) {}
  IValue(bool b) : v_(b) {}
  IValue(const Scalar& s) {
    if (s.is_floating_point()) v_ = s.to_double();
    else if (s.is_boolean()) v_ = s.to_bool();
    else v_ = s.to_long();
  }
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(std::string_view s) : v_(std::string(s)) {}
  IValue(const char* s) : v_(std::string(s)) {}
  IValue(IntArrayRef l) : v_(l.vec()) {}
  IValue(OptionalIntArrayRef l) {
    if (l) v_ = l->vec();
  }
  IValue(std::vector<int64_t> l) : v_(std::move(l)) {}
  IValue(std::vector<double> l) : v_(std::move(l)) {}
  IValue(TensorList l) : v_(l.vec()) {}
  IValue(std::vector<Tensor> l) : v_(std::move(l)) {}
  IValue(std::vector<std::optional<Tensor>> l) : v_(std::move(l)) {}
  IValue(ArrayRef<std::optional<Tensor>> l) : v_(l.vec()) {}
  IValue(Device d) : v_(d) {}
  IValue(Generator g) : v_(std::move(g)) {}
  IValue(ScalarType t) : v_(t) {}
  template <typename T>
  IValue(std::optional<T> o) {
    if (o) *this = IValue(*o);
  }

  bool is_none() const { return v_.index() == 0; }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_int_list() const { return std::holds_alternative<std::vector<int64_t>>(v_); }
  bool is_tensor_list() const { return std::holds_alternative<std::vector<Tensor>>(v_); }
  bool is_scalar() const { return is_double() || is_int() || is_bool(); }

  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  Tensor& to_tensor() { return std::get<Tensor>(v_); }
  double to_double() const;
  int64_t to_int() const;
  bool to_bool() const { return get<bool>("bool"); }
  Scalar to_scalar() const;
  const std::string& to_string() const { return get<std::string>("str"); }
  const std::vector<int64_t>& to_int_list() const;
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  const std::vector<std::optional<Tensor>>& to_optional_tensor_list() const {
    return get<std::vector<std::optional<Tensor>>>("Tensor?[]");
  }
  Device to_device() const;
  const Generator& to_generator() const { return get<Generator>("Generator"); }
  ScalarType to_scalar_type() const;

  const Payload& payload() const { return v_; }
  /// A short type name: "Tensor", "int", "float", "int[]", ...
  std::string type_name() const;

 private:
  template <typename T>
  const T& get(const char* want) const {
    if (auto* p = std::get_if<T>(&v_)) return *p;
    RT_ERROR("IValue: expected ", want, " but got ", type_name());
  }
  Payload v_;
};

using Stack = std::vector<IValue>;

std::ostream& operator<<(std::ostream& os, const IValue& v);

// Conversions between C++ kernel argument types and IValues, used by the boxing adapters.
template <typename T>
struct IValueConv;

template <> struct IValueConv<Tensor> {
  static const Tensor& from(const IValue& v) { return v.to_tensor(); }
};
template <> struct IValueConv<std::optional<Tensor>> {
  static std::optional<Tensor> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<Tensor>(v.to_tensor());
  }
};
template <> struct IValueConv<Scalar> {
  static Scalar from(const IValue& v) { return v.to_scalar(); }
};
template <> struct IValueConv<std::optional<Scalar>> {
  static std::optional<Scalar> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<Scalar>(v.to_scalar());
  }
};
template <> struct IValueConv<int64_t> {
  static int64_t from(const IValue& v) { return v.to_int(); }
};
template <> struct IValueConv<std::optional<int64_t>> {
  static std::optional<int64_t> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<int64_t>(v.to_int());
  }
};
template <> struct IValueConv<double> {
  static double from(const IValue& v) { return v.to_double(); }
};
template <> struct IValueConv<std::optional<double>> {
  static std::optional<double> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<double>(v.to_double());
  }
};
template <> struct IValueConv<bool> {
  static bool from(const IValue& v) { return v.to_bool(); }
};
template <> struct IValueConv<std::optional<bool>> {
  static std::optional<bool> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<bool>(v.to_bool());
  }
};
template <> struct IValueConv<IntArrayRef> {
  static IntArrayRef from(const IValue& v) { return v.to_int_list(); }
};
template <> struct IValueConv<OptionalIntArrayRef> {
  static OptionalIntArrayRef from(const IValue& v) {
    return v.is_none() ? std::nullopt : OptionalIntArrayRef(IntArrayRef(v.to_int_list()));
  }
};
template <> struct IValueConv<TensorList> {
  static TensorList from(const IValue& v) { return v.to_tensor_list(); }
};
template <> struct IValueConv<ArrayRef<std::optional<Tensor>>> {
  static ArrayRef<std::optional<Tensor>> from(const IValue& v) {
    return v.to_optional_tensor_list();
  }
};
template <> struct IValueConv<std::string_view> {
  static std::string_view from(const IValue& v) { return v.to_string(); }
};
template <> struct IValueConv<std::optional<std::string_view>> {
  static std::optional<std::string_view> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<std::string_view>(v.to_string());
  }
};
template <> struct IValueConv<ScalarType> {
  static ScalarType from(const IValue& v) { return v.to_scalar_type(); }
};
template <> struct IValueConv<std::optional<ScalarType>> {
  static std::optional<ScalarType> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<ScalarType>(v.to_scalar_type());
  }
};
template <> struct IValueConv<std::optional<Device>> {
  static std::optional<Device> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<Device>(v.to_device());
  }
};
template <> struct IValueConv<std::optional<Generator>> {
  static std::optional<Generator> from(const IValue& v) {
    return v.is_none() ? std::nullopt : std::optional<Generator>(v.to_generator());
  }
};

// Return values: pushed onto / popped from the stack.
template <typename R>
struct ReturnConv {
  static void push(Stack& s, R r) { s.emplace_back(std::move(r)); }
  static R pop(Stack& s) { return IValueConv<R>::from(s.back()); }
};
template <> struct ReturnConv<Tensor> {
  static void push(Stack& s, Tensor r) { s.emplace_back(std::move(r)); }
  static Tensor pop(Stack& s) { return std::move(s.back().to_tensor()); }
};
template <> struct ReturnConv<std::vector<Tensor>> {
  static void push(Stack& s, std::vector<Tensor> r) { s.emplace_back(std::move(r)); }
  static std::vector<Tensor> pop(Stack& s) { return s.back().to_tensor_list(); }
};
template <typename... Ts>
struct ReturnConv<std::tuple<Ts...>> {
  static void push(Stack& s, std::tuple<Ts...> r) {
    std::apply([&](auto&&... e) { (s.emplace_back(std::move(e)), ...); }, std::move(r));
  }
  static std::tuple<Ts...> pop(Stack& s) {
    return pop_impl(s, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> pop_impl(Stack& s, std::index_sequence<I...>) {
    size_t base = s.size() - sizeof...(Ts);
    return std::tuple<Ts...>(IValueConv<Ts>::from(s[base + I])...);
  }
  static constexpr size_t count = sizeof...(Ts);
};

}  // namespace retorch

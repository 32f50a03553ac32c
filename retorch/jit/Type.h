// JIT types: what a graph value is known to be (a tensor with dtype/shape/strides/device, an
// int, a list, an optional, a module class, ...), printed and parsed in PyTorch's spelling.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "retorch/dispatch/IValue.h"

namespace retorch::jit {

enum class TypeKind : uint8_t {
  kAny,
  kTensor,
  kInt,
  kFloat,
  kBool,
  kNumber,  // int, float or bool: a Scalar argument
  kStr,
  kNone,
  kDevice,
  kScalarType,  // printed as int, like PyTorch's dtype constants
  kGenerator,
  kList,
  kTuple,
  kOptional,
  kClass,  // a module: "__torch__.LinearMod"
};

class Type;
using TypePtr = std::shared_ptr<const Type>;

/// What is known about a tensor value; every field may be unknown.
struct TensorInfo {
  std::optional<ScalarType> dtype;
  std::optional<std::vector<std::optional<int64_t>>> sizes;  // rank known, a size may not be
  std::optional<std::vector<int64_t>> strides;
  std::optional<bool> requires_grad;
  std::optional<Device> device;
  bool operator==(const TensorInfo& o) const;
};

class Type {
 public:
  TypeKind kind() const { return kind_; }
  /// Element type of a list or optional.
  const TypePtr& elem() const { return elems_.at(0); }
  const std::vector<TypePtr>& elems() const { return elems_; }
  const TensorInfo& tensor() const { return tensor_; }
  /// The qualified name of a class type.
  const std::string& name() const { return name_; }

  bool is_tensor() const { return kind_ == TypeKind::kTensor; }
  /// True when the tensor type carries dtype, sizes, strides, device and requires_grad.
  bool is_complete_tensor() const;
  /// PyTorch's spelling: "Float(20, 20, strides=[20, 1], requires_grad=0, device=cpu)",
  /// "Tensor", "int[]", "Tensor?", "(Tensor, int)", "__torch__.LinearMod".
  std::string str() const;
  /// Structural equality.
  bool equals(const Type& o) const;
  /// True when a value of this type may be passed where `to` is expected (Tensor-with-shape to
  /// Tensor, int to Number, None or T to T?, anything to Any).
  bool is_subtype_of(const Type& to) const;
  /// The same type without tensor details (dtype, shape, ...).
  TypePtr unshaped() const;

  static TypePtr any();
  static TypePtr tensor_type();
  static TypePtr int_type();
  static TypePtr float_type();
  static TypePtr bool_type();
  static TypePtr number_type();
  static TypePtr str_type();
  static TypePtr none_type();
  static TypePtr device_type();
  static TypePtr scalar_type_type();
  static TypePtr generator_type();
  static TypePtr list_of(TypePtr elem);
  static TypePtr tuple_of(std::vector<TypePtr> elems);
  static TypePtr optional_of(TypePtr elem);
  static TypePtr class_type(std::string qualified_name);
  static TypePtr tensor_with(TensorInfo info);
  /// The complete type of a concrete tensor (dtype, sizes, strides, requires_grad, device).
  static TypePtr of_tensor(const Tensor& t);
  /// The type of a runtime value (a tensor gets its complete type).
  static TypePtr of(const IValue& v);

 private:
  explicit Type(TypeKind k) : kind_(k) {}
  TypeKind kind_;
  std::vector<TypePtr> elems_;
  TensorInfo tensor_;
  std::string name_;
};

/// PyTorch's capitalized dtype name used in types: Float, Double, Long, BFloat16, ...
std::string_view dtype_type_name(ScalarType t);
/// The inverse of dtype_type_name; nullopt if unknown.
std::optional<ScalarType> dtype_from_type_name(std::string_view name);

}  // namespace retorch::jit

// JIT types: construction, PyTorch-style printing, equality and subtyping.
#include "retorch/jit/Type.h"

#include <sstream>

namespace retorch::jit {

std::string_view dtype_type_name(ScalarType t) { return scalar_type_name(t); }

std::optional<ScalarType> dtype_from_type_name(std::string_view name) {
  for (int i = 0; i < int(ScalarType::NumOptions); ++i)
    if (scalar_type_name(ScalarType(i)) == name) return ScalarType(i);
  return std::nullopt;
}

bool TensorInfo::operator==(const TensorInfo& o) const {
  return dtype == o.dtype && sizes == o.sizes && strides == o.strides &&
         requires_grad == o.requires_grad && device == o.device;
}

bool Type::is_complete_tensor() const {
  if (kind_ != TypeKind::kTensor) return false;
  const TensorInfo& t = tensor_;
  if (!t.dtype || !t.sizes || !t.strides || !t.requires_grad || !t.device) return false;
  for (const auto& s : *t.sizes)
    if (!s) return false;
  return true;
}

std::string Type::str() const {
  switch (kind_) {
    case TypeKind::kAny:
      return "Any";
    case TypeKind::kInt:
      return "int";
    case TypeKind::kFloat:
      return "float";
    case TypeKind::kBool:
      return "bool";
    case TypeKind::kNumber:
      return "Scalar";
    case TypeKind::kStr:
      return "str";
    case TypeKind::kNone:
      return "NoneType";
    case TypeKind::kDevice:
      return "Device";
    case TypeKind::kScalarType:
      return "int";  // dtype constants are ints, as in PyTorch
    case TypeKind::kGenerator:
      return "Generator";
    case TypeKind::kList:
      return elem()->str() + "[]";
    case TypeKind::kOptional:
      return elem()->str() + "?";
    case TypeKind::kClass:
      return name_;
    case TypeKind::kTuple: {
      std::string s = "(";
      for (size_t i = 0; i < elems_.size(); ++i) s += (i ? ", " : "") + elems_[i]->str();
      return s + ")";
    }
    case TypeKind::kTensor:
      break;
  }
  const TensorInfo& t = tensor_;
  if (!t.dtype && !t.sizes && !t.strides && !t.requires_grad && !t.device) return "Tensor";
  std::ostringstream os;
  os << (t.dtype ? dtype_type_name(*t.dtype) : std::string_view("Tensor")) << "(";
  bool first = true;
  auto sep = [&] {
    if (!first) os << ", ";
    first = false;
  };
  if (t.sizes) {
    for (const auto& s : *t.sizes) {
      sep();
      if (s)
        os << *s;
      else
        os << "*";
    }
  }
  if (t.strides && !t.strides->empty()) {  // PyTorch prints no strides for 0-dim tensors
    sep();
    os << "strides=[";
    for (size_t i = 0; i < t.strides->size(); ++i) os << (i ? ", " : "") << (*t.strides)[i];
    os << "]";
  }
  if (t.requires_grad) {
    sep();
    os << "requires_grad=" << int(*t.requires_grad);
  }
  if (t.device) {
    sep();
    os << "device=" << t.device->str();
  }
  os << ")";
  return os.str();
}

bool Type::equals(const Type& o) const {
  if (kind_ != o.kind_ || name_ != o.name_ || !(tensor_ == o.tensor_) ||
      elems_.size() != o.elems_.size())
    return false;
  for (size_t i = 0; i < elems_.size(); ++i)
    if (!elems_[i]->equals(*o.elems_[i])) return false;
  return true;
}

bool Type::is_subtype_of(const Type& to) const {
  switch (to.kind_) {
    case TypeKind::kAny:
      return true;
    case TypeKind::kTensor: {
      if (kind_ != TypeKind::kTensor) return false;
      const TensorInfo& a = tensor_;
      const TensorInfo& b = to.tensor_;
      return (!b.dtype || a.dtype == b.dtype) && (!b.sizes || a.sizes == b.sizes) &&
             (!b.strides || a.strides == b.strides) &&
             (!b.requires_grad || a.requires_grad == b.requires_grad) &&
             (!b.device || a.device == b.device);
    }
    case TypeKind::kNumber:
      return kind_ == TypeKind::kInt || kind_ == TypeKind::kFloat || kind_ == TypeKind::kBool ||
             kind_ == TypeKind::kNumber;
    case TypeKind::kFloat:
      return kind_ == TypeKind::kFloat || kind_ == TypeKind::kInt;
    case TypeKind::kInt:
      return kind_ == TypeKind::kInt || kind_ == TypeKind::kBool || kind_ == TypeKind::kScalarType;
    case TypeKind::kScalarType:
      return kind_ == TypeKind::kScalarType || kind_ == TypeKind::kInt;
    case TypeKind::kDevice:
      return kind_ == TypeKind::kDevice || kind_ == TypeKind::kStr;
    case TypeKind::kOptional:
      return kind_ == TypeKind::kNone ||
             (kind_ == TypeKind::kOptional ? elem()->is_subtype_of(*to.elem())
                                           : is_subtype_of(*to.elem()));
    case TypeKind::kList:
      return kind_ == TypeKind::kList && elem()->is_subtype_of(*to.elem());
    case TypeKind::kTuple: {
      if (kind_ != TypeKind::kTuple || elems_.size() != to.elems_.size()) return false;
      for (size_t i = 0; i < elems_.size(); ++i)
        if (!elems_[i]->is_subtype_of(*to.elems_[i])) return false;
      return true;
    }
    default:
      return equals(to);
  }
}

TypePtr Type::unshaped() const {
  switch (kind_) {
    case TypeKind::kTensor:
      return tensor_type();
    case TypeKind::kList:
      return list_of(elem()->unshaped());
    case TypeKind::kOptional:
      return optional_of(elem()->unshaped());
    case TypeKind::kTuple: {
      std::vector<TypePtr> e;
      for (const auto& t : elems_) e.push_back(t->unshaped());
      return tuple_of(std::move(e));
    }
    default: {
      auto t = std::shared_ptr<Type>(new Type(*this));
      return t;
    }
  }
}

#define RT_SIMPLE_TYPE(fn, k)                                \
  TypePtr Type::fn() {                                       \
    static const TypePtr t = TypePtr(new Type(TypeKind::k)); \
    return t;                                                \
  }
RT_SIMPLE_TYPE(any, kAny)
RT_SIMPLE_TYPE(tensor_type, kTensor)
RT_SIMPLE_TYPE(int_type, kInt)
RT_SIMPLE_TYPE(float_type, kFloat)
RT_SIMPLE_TYPE(bool_type, kBool)
RT_SIMPLE_TYPE(number_type, kNumber)
RT_SIMPLE_TYPE(str_type, kStr)
RT_SIMPLE_TYPE(none_type, kNone)
RT_SIMPLE_TYPE(device_type, kDevice)
RT_SIMPLE_TYPE(scalar_type_type, kScalarType)
RT_SIMPLE_TYPE(generator_type, kGenerator)
#undef RT_SIMPLE_TYPE

TypePtr Type::list_of(TypePtr elem) {
  auto t = std::shared_ptr<Type>(new Type(TypeKind::kList));
  t->elems_.push_back(std::move(elem));
  return t;
}

TypePtr Type::tuple_of(std::vector<TypePtr> elems) {
  auto t = std::shared_ptr<Type>(new Type(TypeKind::kTuple));
  t->elems_ = std::move(elems);
  return t;
}

TypePtr Type::optional_of(TypePtr elem) {
  auto t = std::shared_ptr<Type>(new Type(TypeKind::kOptional));
  t->elems_.push_back(std::move(elem));
  return t;
}

TypePtr Type::class_type(std::string qualified_name) {
  auto t = std::shared_ptr<Type>(new Type(TypeKind::kClass));
  t->name_ = std::move(qualified_name);
  return t;
}

TypePtr Type::tensor_with(TensorInfo info) {
  auto t = std::shared_ptr<Type>(new Type(TypeKind::kTensor));
  t->tensor_ = std::move(info);
  return t;
}

TypePtr Type::of_tensor(const Tensor& t) {
  if (!t.defined()) return tensor_type();
  TensorInfo info;
  info.dtype = t.dtype();
  info.sizes.emplace(t.sizes().begin(), t.sizes().end());
  info.strides = t.strides().vec();
  info.requires_grad = t.requires_grad();
  info.device = t.device();
  return tensor_with(std::move(info));
}

TypePtr Type::of(const IValue& v) {
  const auto& p = v.payload();
  if (v.is_none()) return none_type();
  if (v.is_tensor()) return of_tensor(v.to_tensor());
  if (v.is_double()) return float_type();
  if (v.is_int()) return int_type();
  if (v.is_bool()) return bool_type();
  if (v.is_string()) return str_type();
  if (v.is_int_list()) return list_of(int_type());
  if (std::holds_alternative<std::vector<double>>(p)) return list_of(float_type());
  if (v.is_tensor_list()) return list_of(tensor_type());
  if (std::holds_alternative<std::vector<std::optional<Tensor>>>(p))
    return list_of(optional_of(tensor_type()));
  if (std::holds_alternative<Device>(p)) return device_type();
  if (std::holds_alternative<Generator>(p)) return generator_type();
  if (std::holds_alternative<ScalarType>(p)) return scalar_type_type();
  return any();
}

}  // namespace retorch::jit

// dtype names, default dtype, type promotion; Device parsing; Scalar printing; errors.
#include <atomic>
#include <iostream>
#include <iterator>

#include "retorch/core/Device.h"
#include "retorch/core/Error.h"
#include "retorch/core/Scalar.h"
#include "retorch/core/ScalarType.h"

namespace retorch {

std::string_view dtype_name(ScalarType t) {
  switch (t) {
    case kByte: return "uint8";
    case kChar: return "int8";
    case kShort: return "int16";
    case kInt: return "int32";
    case kLong: return "int64";
    case kHalf: return "float16";
    case kFloat: return "float32";
    case kDouble: return "float64";
    case kBool: return "bool";
    case kBFloat16: return "bfloat16";
    default: return "undefined";
  }
}

std::string_view legacy_type_name(ScalarType t) {
  switch (t) {
    case kByte: return "torch.ByteTensor";
    case kChar: return "torch.CharTensor";
    case kShort: return "torch.ShortTensor";
    case kInt: return "torch.IntTensor";
    case kLong: return "torch.LongTensor";
    case kHalf: return "torch.HalfTensor";
    case kFloat: return "torch.FloatTensor";
    case kDouble: return "torch.DoubleTensor";
    case kBool: return "torch.BoolTensor";
    case kBFloat16: return "torch.BFloat16Tensor";
    default: return "torch.UndefinedTensor";
  }
}

std::string_view scalar_type_name(ScalarType t) {
  constexpr std::string_view names[] = {"Byte", "Char", "Short", "Int",  "Long",
                                        "Half", "Float", "Double", "Bool", "BFloat16"};
  const auto i = size_t(t);
  return i < std::size(names) ? names[i] : "Undefined";
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  RT_CHECK(a != ScalarType::Undefined && b != ScalarType::Undefined,
           "promote_types: undefined dtype");
  if (a == kBool) return b;
  if (b == kBool) return a;
  bool fa = is_floating_type(a), fb = is_floating_type(b);
  if (fa && fb) {
    if (is_reduced_float(a) && is_reduced_float(b)) return kFloat;  // half + bfloat16
    return element_size(a) >= element_size(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral: uint8 with a signed type needs a wider signed type.
  if (a == kByte || b == kByte) {
    ScalarType other = a == kByte ? b : a;
    return other == kChar ? kShort : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

namespace {
std::atomic<ScalarType> g_default_dtype{kFloat};
}
ScalarType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) {
  RT_CHECK_TYPE(t == kFloat || t == kDouble || t == kHalf || t == kBFloat16,
                "only floating-point types are supported as the default type (got ", t, ")");
  g_default_dtype = t;
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_floating_point()) return os << s.to_double();
  if (s.is_boolean()) return os << (s.to_bool() ? "True" : "False");
  return os << s.to_long();
}

Device::Device(std::string_view spec) {
  std::string_view t = spec;
  size_t colon = spec.find(':');
  if (colon != std::string_view::npos) t = spec.substr(0, colon);
  if (t == "cpu") type = kCPU;
  else if (t == "cuda") type = kCUDA;
  else if (t == "mps") type = kMPS;
  else if (t == "xpu") type = kXPU;
  else if (t == "meta") type = kMeta;
  else RT_ERROR("Expected one of cpu, cuda, mps, xpu, meta device type at start of device string: ",
                spec);
  if (colon != std::string_view::npos) {
    std::string idx(spec.substr(colon + 1));
    RT_CHECK(!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos,
             "Invalid device string: '", spec, "'");
    RT_CHECK(idx.size() <= 3 && std::stoi(idx) <= 127, "Invalid device string: '", spec,
             "' (device index out of range)");
    index = int8_t(std::stoi(idx));
  }
}

namespace {
thread_local int8_t tls_current_index[kNumDeviceTypes] = {};
}

int8_t current_device_index(DeviceType t) { return tls_current_index[int(t)]; }
void set_current_device_index(DeviceType t, int8_t index) { tls_current_index[int(t)] = index; }

Device Device::canonical() const {
  if (!has_index()) return Device(type);
  return Device(type, index < 0 ? current_device_index(type) : index);
}

std::string Device::str() const {
  std::string s(device_type_name(type));
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case kCPU: return "cpu";
    case kCUDA: return "cuda";
    case kMPS: return "mps";
    case kXPU: return "xpu";
    case kMeta: return "meta";
  }
  return "unknown";
}

namespace detail {
void throw_error(ErrorKind kind, const std::string& msg) { throw Error(kind, msg); }
}  // namespace detail

}  // namespace retorch

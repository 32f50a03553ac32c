// pybind11 type casters shared by the hand-written and generated bindings.
#pragma once
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <initializer_list>
#include <optional>
#include <tuple>
#include <vector>

#include "retorch/retorch.h"

namespace py = pybind11;

namespace retorch::python {
/// Converts varargs sizes (2, 3) or a single sequence ((2, 3)) to ints.
std::vector<int64_t> pyargs_to_ints(const py::args& args);
/// None, a device or a device string ("cuda:1") as an optional Device.
std::optional<Device> optional_device(const py::object& device);

/// The named tuple type retorch.return_types.<name> (python/retorch/return_types.py), for ops
/// whose results PyTorch names (max.dim's values and indices); a new reference, kept for good
/// by the generated bindings (released, so it outlives the interpreter's teardown).
py::object return_type(const char* name, std::initializer_list<const char*> fields);

/// An op's tuple of results as an instance of a return_type.
template <typename... Ts>
py::object named_result(py::handle type, std::tuple<Ts...>&& r) {
  return std::apply([&](auto&&... e) { return type(py::cast(std::move(e))...); }, std::move(r));
}

/// out= of an op whose ops.yaml entry has no out variant (the generated bindings take it all
/// the same, as PyTorch's ops do): result written into out as PyTorch's out= variants write —
/// no autograd through out=, the result's dtype castable to out's, out resized to the result's
/// shape — and out returned (python/src/out_args.cpp).
Tensor write_out_arg(const Tensor& result, const Tensor& out, const char* op);

/// The same for an op with several results: out is a sequence of as many tensors.
template <typename... Ts>
py::tuple write_out_args(std::tuple<Ts...>&& r, const py::sequence& out, const char* op) {
  constexpr size_t n = sizeof...(Ts);
  RT_CHECK_TYPE(py::len(out) == n, op, "(): expected out to be a tuple of ", n, " Tensors, got ",
                py::len(out), " elements");
  py::tuple written(n);
  size_t i = 0;
  std::apply(
      [&](const auto&... t) {
        ((written[i] = py::cast(write_out_arg(t, out[i].template cast<Tensor>(), op)), ++i), ...);
      },
      r);
  return written;
}

// Note [One Python object per tensor]
// As in PyTorch, a TensorImpl has at most one live Python object: every Tensor handed to Python
// whose impl already has one gets that object back, so `x.add_(1) is x`, `x.contiguous() is x`
// for a contiguous x, `p.requires_grad_() is p` for a Parameter, `w.grad is w.grad`, and
// attributes set on a tensor stay with it. The impl keeps a borrowed pointer to its object
// (TensorImpl::pyobj): set when the caster below makes an owning object or Tensor.__init__ runs
// (the newest object wins: a Parameter made over a C++ module's tensor becomes its object),
// cleared by the Tensor type's dealloc when that object goes (tensor.cpp). An object being
// destroyed (no references left) is never handed out again.

/// A Tensor argument that refuses Python numbers (Note [Python numbers for Tensor arguments] in
/// tools/codegen/gen_python.py): the generated bindings take it wherever PyTorch's do not accept
/// a number, so torch.atan2(x, 2) raises TypeError as torch's does.
struct StrictTensor : Tensor {
  StrictTensor() = default;
  explicit StrictTensor(const Tensor& t) : Tensor(t) {}
};

/// The TypeError of a call giving Python numbers for more Tensor arguments than one of the
/// op's overloads takes at once (torch.pow(2, 3)).
[[noreturn]] void numbers_error(const char* op);

/// The live Python object of t's TensorImpl, or null.
inline PyObject* object_of(const Tensor& t) {
  if (!t.defined()) return nullptr;
  auto* o = static_cast<PyObject*>(t.impl()->pyobj());
  return o && Py_REFCNT(o) > 0 ? o : nullptr;
}
}  // namespace retorch::python

namespace pybind11::detail {

// Note [Fast caster failure]
// Overload resolution tries each overload's casters in turn, twice (without, then with implicit
// conversions), and a pybind11 class caster that fails looks for a foreign module's loader:
// hasattr on the argument's type, an AttributeError raised, formatted and cleared each time.
// x.to("cpu") failed six class loads that way (4.2 us, torch 0.2). The casters of the classes
// that open overload sets (Tensor, dtype, device) check the argument's type first and return
// false at once for anything they cannot take; what they can take is unchanged.

/// Whether o is an instance of the class pybind11 registered for T (subclasses included).
template <typename T>
bool is_bound_instance(handle o) {
  static PyTypeObject* const type = get_type_info(typeid(T))->type;
  return PyObject_TypeCheck(o.ptr(), type);
}

/// dtype <-> Python: one object per dtype, made once (Note [dtype objects]).
template <>
class type_caster<retorch::ScalarType> : public type_caster_base<retorch::ScalarType> {
  using base = type_caster_base<retorch::ScalarType>;

 public:
  bool load(handle src, bool convert) {  // Note [Fast caster failure]
    if (!src) return false;
    if (is_bound_instance<retorch::ScalarType>(src)) return base::load(src, convert);
    // Python's float, int and bool types stand for float64, int64 and bool, as in torch.
    PyObject* o = src.ptr();
    if (o == reinterpret_cast<PyObject*>(&PyFloat_Type))
      python_type_ = retorch::kDouble;
    else if (o == reinterpret_cast<PyObject*>(&PyLong_Type))
      python_type_ = retorch::kLong;
    else if (o == reinterpret_cast<PyObject*>(&PyBool_Type))
      python_type_ = retorch::kBool;
    else
      return false;
    value = &python_type_;
    return true;
  }
  static handle cast(retorch::ScalarType t, return_value_policy, handle parent) {
    static PyObject* objects[int(retorch::ScalarType::NumOptions) + 1] = {};
    const int i = int(t);
    if (i < 0 || i > int(retorch::ScalarType::NumOptions))
      return base::cast(t, return_value_policy::copy, parent);
    if (!objects[i]) objects[i] = base::cast(t, return_value_policy::copy, parent).ptr();
    return handle(objects[i]).inc_ref();  // the cache's reference is kept for good
  }
  static handle cast(const retorch::ScalarType* t, return_value_policy p, handle parent) {
    return t ? cast(*t, p, parent) : none().release();
  }

 private:
  retorch::ScalarType python_type_ = retorch::kFloat;
};

/// Tensor <-> Python: pybind11's class caster, reusing a tensor's live object (Note [One Python
/// object per tensor]).
template <>
class type_caster<retorch::Tensor> : public type_caster_base<retorch::Tensor> {
  using base = type_caster_base<retorch::Tensor>;

  static handle remember(handle h, const retorch::Tensor& t) {
    if (h && t.defined()) t.impl()->set_pyobj(h.ptr());
    return h;
  }

 public:
  // Note [Fast caster failure]: a tensor, or (converting) a bool, int or float, the numbers
  // tensor.cpp makes implicitly convertible.
  bool load(handle src, bool convert) {
    if (!src) return false;
    if (is_bound_instance<retorch::Tensor>(src)) return base::load(src, convert);
    PyObject* o = src.ptr();
    if (!convert || !(PyLong_Check(o) || PyFloat_Check(o))) return false;  // (bool is an int)
    return base::load(src, convert);
  }

  static handle cast(const retorch::Tensor& t, return_value_policy policy, handle parent) {
    if (PyObject* o = retorch::python::object_of(t)) return handle(o).inc_ref();
    const bool owning = policy != return_value_policy::reference &&
                        policy != return_value_policy::reference_internal;
    handle h = base::cast(t, policy, parent);
    return owning ? remember(h, t) : h;
  }
  static handle cast(retorch::Tensor&& t, return_value_policy policy, handle parent) {
    if (PyObject* o = retorch::python::object_of(t)) return handle(o).inc_ref();
    retorch::TensorImpl* impl = t.defined() ? t.impl() : nullptr;
    handle h = base::cast(std::move(t), policy, parent);
    if (h && impl) impl->set_pyobj(h.ptr());
    return h;
  }
  static handle cast(const retorch::Tensor* t, return_value_policy policy, handle parent) {
    if (t)
      if (PyObject* o = retorch::python::object_of(*t)) return handle(o).inc_ref();
    return base::cast(t, policy, parent);
  }
};

/// StrictTensor <- Python: a tensor only (no implicit conversion from numbers).
template <>
class type_caster<retorch::python::StrictTensor> {
 public:
  PYBIND11_TYPE_CASTER(retorch::python::StrictTensor, const_name("Tensor"));
  bool load(handle src, bool convert) {
    if (!src || !is_bound_instance<retorch::Tensor>(src)) return false;
    type_caster<retorch::Tensor> tensor;
    if (!tensor.load(src, convert)) return false;
    value = retorch::python::StrictTensor(static_cast<retorch::Tensor&>(tensor));
    return true;
  }
  static handle cast(const retorch::python::StrictTensor& t, return_value_policy policy,
                     handle parent) {
    return type_caster<retorch::Tensor>::cast(static_cast<const retorch::Tensor&>(t), policy,
                                              parent);
  }
};

/// device <-> Python: a device object, or (converting) a device string such as "cuda:1"; a string
/// that names no device fails to load (Note [Fast caster failure]).
template <>
class type_caster<retorch::Device> : public type_caster_base<retorch::Device> {
  using base = type_caster_base<retorch::Device>;

 public:
  bool load(handle src, bool convert) {
    if (!src) return false;
    if (is_bound_instance<retorch::Device>(src)) return base::load(src, convert);
    if (!convert || !PyUnicode_Check(src.ptr())) return false;
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(src.ptr(), &n);
    if (s == nullptr) {
      PyErr_Clear();
      return false;
    }
    try {
      parsed_ = retorch::Device(std::string(s, size_t(n)));
    } catch (const std::exception&) {
      return false;
    }
    value = &parsed_;
    return true;
  }

  // One object per device, made once (device objects are immutable): x.device took 0.25 us
  // making a new one each time (torch 0.05).
  static handle cast(const retorch::Device& d, return_value_policy, handle parent) {
    static PyObject* objects[retorch::kNumDeviceTypes][kCachedIndices + 1] = {};
    const int t = int(d.type), i = d.index + 1;
    if (t < 0 || t >= retorch::kNumDeviceTypes || i < 0 || i > kCachedIndices)
      return base::cast(d, return_value_policy::copy, parent);
    if (!objects[t][i]) objects[t][i] = base::cast(d, return_value_policy::copy, parent).ptr();
    return handle(objects[t][i]).inc_ref();  // the cache's reference is kept for good
  }
  static handle cast(const retorch::Device* d, return_value_policy p, handle parent) {
    return d ? cast(*d, p, parent) : none().release();
  }

 private:
  static constexpr int kCachedIndices = 64;  // indices -1 (none) to 63
  retorch::Device parsed_{retorch::kCPU};
};

/// Scalar <-> Python bool / int / float (and one-element tensors).
template <>
struct type_caster<retorch::Scalar> {
  PYBIND11_TYPE_CASTER(retorch::Scalar, const_name("Number"));
  bool load(handle src, bool convert);
  static handle cast(const retorch::Scalar& s, return_value_policy, handle);
};

/// IntArrayRef from an int or a sequence of ints; owns the storage for the call.
template <>
struct type_caster<retorch::IntArrayRef> {
  PYBIND11_TYPE_CASTER(retorch::IntArrayRef, const_name("List[int]"));
  std::vector<int64_t> storage;
  bool load(handle src, bool convert);
  static handle cast(retorch::IntArrayRef v, return_value_policy, handle);
};

/// Optional IntArrayRef: None or as above (pybind11's optional caster would dangle).
template <>
struct type_caster<retorch::OptionalIntArrayRef> {
  PYBIND11_TYPE_CASTER(retorch::OptionalIntArrayRef, const_name("Optional[List[int]]"));
  std::vector<int64_t> storage;
  bool load(handle src, bool convert);
  static handle cast(retorch::OptionalIntArrayRef v, return_value_policy p, handle h) {
    if (!v) return none().release();
    return type_caster<retorch::IntArrayRef>::cast(*v, p, h);
  }
};

/// TensorList from a list/tuple of tensors.
template <>
struct type_caster<retorch::TensorList> {
  PYBIND11_TYPE_CASTER(retorch::TensorList, const_name("List[Tensor]"));
  std::vector<retorch::Tensor> storage;
  bool load(handle src, bool convert);
  static handle cast(retorch::TensorList, return_value_policy, handle) { return none().release(); }
};

/// Tensor?[] (index lists) from a list/tuple of tensors and Nones.
template <>
struct type_caster<retorch::ArrayRef<std::optional<retorch::Tensor>>> {
  PYBIND11_TYPE_CASTER(retorch::ArrayRef<std::optional<retorch::Tensor>>,
                       const_name("List[Optional[Tensor]]"));
  std::vector<std::optional<retorch::Tensor>> storage;
  bool load(handle src, bool convert);
  static handle cast(retorch::ArrayRef<std::optional<retorch::Tensor>>, return_value_policy,
                     handle) {
    return none().release();
  }
};

}  // namespace pybind11::detail

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
}  // namespace retorch::python

namespace pybind11::detail {

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

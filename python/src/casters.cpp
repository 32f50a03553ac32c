// Type caster implementations: Python numbers, int lists and tensor lists to C++.
#include "python/src/bindings.h"

namespace pybind11::detail {

bool type_caster<retorch::Scalar>::load(handle src, bool convert) {
  if (PyBool_Check(src.ptr())) {
    value = retorch::Scalar(src.ptr() == Py_True);
    return true;
  }
  if (PyLong_Check(src.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(src.ptr(), &overflow);
    if (overflow) return false;
    value = retorch::Scalar(int64_t(v));
    return true;
  }
  if (PyFloat_Check(src.ptr())) {
    value = retorch::Scalar(PyFloat_AsDouble(src.ptr()));
    return true;
  }
  if (convert) {
    // numpy scalars and one-element tensors
    if (isinstance<retorch::Tensor>(src)) {
      const auto& t = src.cast<const retorch::Tensor&>();
      if (t.numel() != 1) return false;
      value = t.item();
      return true;
    }
    if (hasattr(src, "dtype") && hasattr(src, "item")) {
      object item = src.attr("item")();
      return load(item, false);
    }
  }
  return false;
}

handle type_caster<retorch::Scalar>::cast(const retorch::Scalar& s, return_value_policy, handle) {
  if (s.is_boolean()) return bool_(s.to_bool()).release();
  if (s.is_floating_point()) return float_(s.to_double()).release();
  return int_(s.to_long()).release();
}

static bool load_ints(handle src, std::vector<int64_t>& out) {
  out.clear();
  if (PyBool_Check(src.ptr())) return false;
  if (PyLong_Check(src.ptr())) {
    out.push_back(PyLong_AsLongLong(src.ptr()));
    return true;
  }
  if (!PyTuple_Check(src.ptr()) && !PyList_Check(src.ptr())) {
    // torch.Size-like objects and numpy integer arrays
    if (isinstance<retorch::Tensor>(src) || !hasattr(src, "__iter__") || isinstance<str>(src))
      return false;
  }
  for (handle item : reinterpret_borrow<iterable>(src)) {
    if (PyBool_Check(item.ptr())) return false;
    if (PyLong_Check(item.ptr())) {
      out.push_back(PyLong_AsLongLong(item.ptr()));
    } else if (hasattr(item, "__index__")) {
      out.push_back(item.attr("__index__")().cast<int64_t>());
    } else {
      return false;
    }
  }
  return true;
}

bool type_caster<retorch::IntArrayRef>::load(handle src, bool) {
  if (!load_ints(src, storage)) return false;
  value = retorch::IntArrayRef(storage);
  return true;
}

handle type_caster<retorch::IntArrayRef>::cast(retorch::IntArrayRef v, return_value_policy, handle) {
  tuple t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = int_(v[i]);
  return t.release();
}

bool type_caster<retorch::OptionalIntArrayRef>::load(handle src, bool) {
  if (src.is_none()) {
    value = std::nullopt;
    return true;
  }
  if (!load_ints(src, storage)) return false;
  value = retorch::IntArrayRef(storage);
  return true;
}

bool type_caster<retorch::TensorList>::load(handle src, bool) {
  if (!PyTuple_Check(src.ptr()) && !PyList_Check(src.ptr())) return false;
  storage.clear();
  for (handle item : reinterpret_borrow<sequence>(src)) {
    if (!isinstance<retorch::Tensor>(item)) return false;
    storage.push_back(item.cast<retorch::Tensor>());
  }
  value = retorch::TensorList(storage);
  return true;
}

bool type_caster<retorch::ArrayRef<std::optional<retorch::Tensor>>>::load(handle src, bool) {
  if (!PyTuple_Check(src.ptr()) && !PyList_Check(src.ptr())) return false;
  storage.clear();
  for (handle item : reinterpret_borrow<sequence>(src)) {
    if (item.is_none()) {
      storage.emplace_back(std::nullopt);
    } else if (isinstance<retorch::Tensor>(item)) {
      storage.emplace_back(item.cast<retorch::Tensor>());
    } else {
      return false;
    }
  }
  value = retorch::ArrayRef<std::optional<retorch::Tensor>>(storage);
  return true;
}

}  // namespace pybind11::detail

namespace retorch::python {

std::optional<Device> optional_device(const py::object& device) {
  if (device.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(device)) return Device(device.cast<std::string>());
  return device.cast<Device>();
}

py::object return_type(const char* name, std::initializer_list<const char*> fields) {
  py::list names;
  for (const char* f : fields) names.append(f);
  return py::module_::import("retorch.return_types").attr("_make")(name, names);
}

// An element of a size: an int (not a bool), or an object with __index__ (a 0-dim integer
// tensor, numpy's integers); anything else is a TypeError, as torch's.
// (A tensor has __index__, which fails unless it holds one integer: that is a TypeError too.)
// h's __index__ into v; false, the Python error cleared, when it fails.
static bool index_value(py::handle h, int64_t& v) {
  PyObject* i = PyNumber_Index(h.ptr());
  if (!i) {
    PyErr_Clear();
    return false;
  }
  v = py::reinterpret_steal<py::int_>(i).cast<int64_t>();
  return true;
}

static int64_t size_element(py::handle h) {
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return h.cast<int64_t>();
  int64_t v = 0;
  if (!PyBool_Check(h.ptr()) && !PyFloat_Check(h.ptr()) && PyIndex_Check(h.ptr()) &&
      index_value(h, v))
    return v;
  throw py::type_error(std::string("argument 'size' must be tuple of ints, but found element "
                                   "of type ") +
                       Py_TYPE(h.ptr())->tp_name);
}

void numbers_error(const char* op) {
  throw py::type_error(std::string(op) +
                       "() received an invalid combination of arguments: "
                       "Python numbers for more of its Tensor arguments than one overload takes");
}

std::vector<int64_t> pyargs_to_ints(const py::args& args) {
  std::vector<int64_t> out;
  // One tensor is a size only when it holds one integer (its __index__), as torch's.
  if (args.size() == 1 && py::detail::is_bound_instance<Tensor>(args[0])) {
    int64_t v = 0;
    if (!index_value(args[0], v))
      throw py::type_error("argument 'size' must be tuple of ints, not Tensor");
    out.push_back(v);
    return out;
  }
  if (args.size() == 1 && !PyLong_Check(args[0].ptr()) && !PyIndex_Check(args[0].ptr())) {
    if (!PyTuple_Check(args[0].ptr()) && !PyList_Check(args[0].ptr()) &&
        !py::hasattr(args[0], "__iter__"))
      throw py::type_error(std::string("argument 'size' must be tuple of ints, not ") +
                           Py_TYPE(args[0].ptr())->tp_name);
    if (PyUnicode_Check(args[0].ptr()))
      throw py::type_error("argument 'size' must be tuple of ints, not str");
    for (py::handle h : args[0]) out.push_back(size_element(h));
    return out;
  }
  for (py::handle h : args) out.push_back(size_element(h));
  return out;
}

}  // namespace retorch::python

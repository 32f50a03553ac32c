// The Python Tensor class: properties, indexing, numpy conversion and operator dunders.
#include <pybind11/numpy.h>

#include "python/src/bindings.h"
#include "retorch/core/Dtypes.h"
#include "retorch/core/ValueReadHook.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/ElementAddress.h"

namespace retorch::python {

namespace {

py::dtype numpy_dtype(ScalarType t) {
  switch (t) {
    case kByte: return py::dtype("uint8");
    case kChar: return py::dtype("int8");
    case kShort: return py::dtype("int16");
    case kInt: return py::dtype("int32");
    case kLong: return py::dtype("int64");
    case kHalf: return py::dtype("float16");
    case kFloat: return py::dtype("float32");
    case kDouble: return py::dtype("float64");
    case kBool: return py::dtype("bool");
    default: throw py::type_error("Got unsupported ScalarType " + std::string(dtype_name(t)));
  }
}

ScalarType from_numpy_dtype(const py::dtype& dt) {
  char kind = dt.kind();
  size_t sz = size_t(dt.itemsize());
  if (kind == 'f' && sz == 2) return kHalf;
  if (kind == 'f' && sz == 4) return kFloat;
  if (kind == 'f' && sz == 8) return kDouble;
  if (kind == 'i' && sz == 1) return kChar;
  if (kind == 'i' && sz == 2) return kShort;
  if (kind == 'i' && sz == 4) return kInt;
  if (kind == 'i' && sz == 8) return kLong;
  if (kind == 'u' && sz == 1) return kByte;
  if (kind == 'b') return kBool;
  throw py::type_error("can't convert np.ndarray of type " + std::string(py::str(static_cast<py::handle>(dt))) +
                       ". The only supported types are: float64, float32, float16, int64, int32, "
                       "int16, int8, uint8, and bool.");
}

}  // namespace

py::array to_numpy(const Tensor& t) {
  RT_CHECK(!t.requires_grad(), "Can't call numpy() on Tensor that requires grad. Use "
           "tensor.detach().numpy() instead.");
  RT_CHECK_TYPE(t.is_cpu(), "can't convert ", t.device(), " device type tensor to numpy. Use "
                "Tensor.cpu() to copy the tensor to host memory first.");
  py::dtype dt = numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(s * t.element_size());
  auto* keep = new Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, strides, t.numel() ? t.data_ptr() : nullptr, owner);
}

Tensor from_numpy(py::array arr) {
  ScalarType st = from_numpy_dtype(arr.dtype());
  std::vector<int64_t> sizes, strides;
  int64_t isz = int64_t(arr.itemsize());
  for (py::ssize_t d = 0; d < arr.ndim(); ++d) {
    sizes.push_back(arr.shape(d));
    int64_t s = arr.strides(d);
    if (s < 0)
      throw py::value_error("At least one stride in the given numpy array is negative, and tensors "
                            "with negative strides are not currently supported. (You can probably "
                            "work around this by making a copy of your array  with array.copy().)");
    if (s % isz != 0)
      throw py::value_error("given numpy array strides not a multiple of the element byte size. "
                            "Copy the numpy array to reallocate the memory.");
    strides.push_back(s / isz);
  }
  auto* keep = new py::object(arr);
  void* data = arr.mutable_data();
  return from_blob(data, sizes, strides, st, [keep](void*) {
    py::gil_scoped_acquire gil;
    delete keep;
  });
}

namespace {

// Note [Python indexing]
// Like PyTorch's applySlicing: ints, slices, None and Ellipsis become views; every tensor-like
// item (tensor, list, Python bool) is recorded at the dim it indexes in that view and applied
// afterwards with one index / index_put_ call. As in PyTorch, an n-dim mask counts n dims for
// Ellipsis but moves the dim cursor by one.
struct IndexedView {
  Tensor view;
  std::vector<std::optional<Tensor>> indices;  // empty: no advanced indexing
};

bool is_sequence_index(py::handle it) {
  return PyList_Check(it.ptr()) || (PySequence_Check(it.ptr()) && !PyTuple_Check(it.ptr()) &&
                                    !py::isinstance<py::str>(it) && !py::isinstance<Tensor>(it));
}

// numpy's legacy rule, kept by PyTorch: a short non-tuple sequence holding a tensor, a sequence,
// a slice, Ellipsis or None is a tuple of indices (x[[[0, 1], [1, 2]]] is x[[0, 1], [1, 2]]).
bool treat_sequence_as_tuple(py::handle index) {
  if (PyTuple_Check(index.ptr())) return true;
  if (py::isinstance<Tensor>(index) || !is_sequence_index(index)) return false;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(index);
  if (seq.size() >= 32) return false;
  for (py::handle it : seq) {
    if (it.is_none() || it.ptr() == Py_Ellipsis || PySlice_Check(it.ptr()) ||
        py::isinstance<Tensor>(it) || is_sequence_index(it))
      return true;
  }
  return false;
}

Tensor sequence_to_index(py::handle it) {
  Tensor idx = py::module_::import("retorch").attr("tensor")(it).cast<Tensor>();
  return idx.numel() == 0 ? idx.to(kLong) : idx;  // x[[]] selects nothing, as in PyTorch
}

IndexedView apply_index(const Tensor& self, py::handle index) {
  py::tuple items = treat_sequence_as_tuple(index)
                        ? py::tuple(py::reinterpret_borrow<py::object>(index))
                        : py::make_tuple(index);
  int64_t specified = 0;
  for (py::handle it : items) {
    if (it.is_none() || it.ptr() == Py_Ellipsis || PyBool_Check(it.ptr())) continue;
    if (py::isinstance<Tensor>(it)) {
      Tensor t = it.cast<Tensor>();
      specified += (t.dtype() == kBool || t.dtype() == kByte) ? t.dim() : 1;
    } else {
      specified++;
    }
  }
  RT_CHECK_INDEX(specified <= self.dim(), "too many indices for tensor of dimension ", self.dim());
  IndexedView r{self, {}};
  Tensor& t = r.view;
  int64_t dim = 0;
  auto record = [&](const Tensor& idx) {
    r.indices.resize(size_t(dim + 1));
    r.indices[size_t(dim)] = idx;
    dim++;
  };
  auto record_bool = [&](bool v) {
    t = t.unsqueeze(dim);
    record(v ? zeros({1}, TensorOptions().dtype(kLong)) : make_empty({0}, kLong));
  };
  for (py::handle it : items) {
    if (PyBool_Check(it.ptr())) {
      record_bool(it.ptr() == Py_True);
    } else if (PyLong_Check(it.ptr()) || (!py::isinstance<Tensor>(it) && !is_sequence_index(it) &&
                                          py::hasattr(it, "__index__"))) {
      t = t.select(dim, it.attr("__index__")().cast<int64_t>());
    } else if (PySlice_Check(it.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(it.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
      RT_CHECK_VALUE(step > 0, "step must be greater than zero");
      py::slice sl = py::reinterpret_borrow<py::slice>(it);
      std::optional<int64_t> s, e;
      if (!py::getattr(sl, "start").is_none()) s = start;
      if (!py::getattr(sl, "stop").is_none()) e = stop;
      t = t.slice(dim, s, e, step);
      dim++;
    } else if (it.is_none()) {
      t = t.unsqueeze(dim);
      dim++;
    } else if (it.ptr() == Py_Ellipsis) {
      dim += self.dim() - specified;
    } else {
      Tensor idx = py::isinstance<Tensor>(it) ? it.cast<Tensor>() : sequence_to_index(it);
      RT_CHECK_INDEX(is_integral_type(idx.dtype(), true), "tensors used as indices must be long, "
                     "byte or bool tensors (got ", idx.dtype(), ")");
      if (idx.dim() == 0 && idx.dtype() != kBool && idx.dtype() != kByte) {
        t = t.select(dim, idx.item<int64_t>());
      } else if (idx.dim() == 0) {
        record_bool(idx.item<bool>());
      } else {
        record(idx);
      }
    }
  }
  return r;
}

// PyTorch drops leading size-1 dims of an assigned value, so x[0] = ones(1, n) works.
Tensor strip_leading_ones(const Tensor& v) {
  int64_t k = 0;
  while (k < v.dim() && v.size(k) == 1) k++;
  return k == 0 ? v : v.reshape(v.sizes().slice(size_t(k)));
}

Tensor get_item(const Tensor& self, py::handle index) {
  IndexedView r = apply_index(self, index);
  if (r.indices.empty()) return r.view;
  return retorch::index(r.view, r.indices);
}

void set_item(const Tensor& self, py::handle index, py::handle value) {
  IndexedView r = apply_index(self, index);
  Tensor v = py::isinstance<Tensor>(value)
                 ? value.cast<Tensor>()
                 : scalar_to_tensor(value.cast<Scalar>()).to(self.dtype());
  v = strip_leading_ones(v);
  if (r.indices.empty()) {
    if (py::isinstance<Tensor>(value)) r.view.copy_(v);
    else r.view.fill_(value.cast<Scalar>());
  } else {
    r.view.index_put_(r.indices, v);
  }
}

// The elements of a contiguous CPU tensor from p on, as nested lists below dim (a number at
// the last): tolist's values without numpy (through numpy took 0.84 us for 16 floats, torch
// 0.23).
template <typename T>
PyObject* nested_list(const T*& p, IntArrayRef sizes, size_t dim) {
  if (dim == sizes.size()) {
    const T v = *p++;
    if constexpr (std::is_same_v<T, bool>)
      return PyBool_FromLong(v);
    else if constexpr (std::is_integral_v<T>)
      return PyLong_FromLongLong(static_cast<long long>(v));
    else
      return PyFloat_FromDouble(static_cast<double>(v));
  }
  const int64_t n = sizes[dim];
  PyObject* list = PyList_New(n);
  if (!list) throw py::error_already_set();
  for (int64_t i = 0; i < n; ++i) {
    PyObject* item = nested_list(p, sizes, dim + 1);
    if (!item) {
      Py_DECREF(list);
      throw py::error_already_set();
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

py::object to_list(const Tensor& t) {
  retorch::detail::notify_value_read(t);  // the JIT tracer warns: the trace freezes it
  Tensor c = t.detach();
  if (!c.is_cpu()) c = c.to(Device(kCPU));  // like torch: tolist() reads any device
  if (!c.is_contiguous()) c = c.contiguous();
  PyObject* out = nullptr;
  RT_DISPATCH_ALL(c.dtype(), "tolist", [&] {
    const scalar_t* p = c.data_ptr<scalar_t>();
    out = nested_list(p, c.sizes(), 0);
  });
  return py::reinterpret_steal<py::object>(out);
}

// x.T (every dim reversed; torch's deprecation warning, once, unless 0-d or 2-d), x.H (the
// same, 2-d only: real tensors are their own conjugates), x.mT and x.mH (the last two dims
// swapped).
bool warned_reversed_dims = false;

Tensor reversed_dims(const Tensor& t, const char* name) {
  if (name[0] == 'H') {
    RT_CHECK(t.dim() == 0 || t.dim() == 2, "tensor.H is only supported on matrices (2-D "
             "tensors). Got ", t.dim(), "-D tensor.", t.dim() > 2 ? " For batches of matrices, "
             "consider using tensor.mH" : "");
  } else if (t.dim() != 0 && t.dim() != 2 && !warned_reversed_dims) {
    warned_reversed_dims = true;  // once per process, as torch's TORCH_WARN_ONCE
    if (PyErr_WarnEx(PyExc_UserWarning, "The use of `x.T` on tensors of dimension other than 2 "
                     "to reverse their shape is deprecated and it will throw an error in a future "
                     "release. Consider `x.mT` to transpose batches of matrices or "
                     "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of "
                     "a tensor.", 1) != 0)
      throw py::error_already_set();
  }
  std::vector<int64_t> dims(size_t(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) dims[size_t(d)] = t.dim() - 1 - d;
  return t.permute(dims);
}

Tensor matrix_transpose(const Tensor& t, const char* name) {
  if (t.dim() == 0) return t.permute(std::vector<int64_t>{});  // a view, as torch's
  RT_CHECK(t.dim() >= 2, "tensor.", name, " is only supported on matrices or batches of "
           "matrices. Got ", t.dim(), "-D tensor.");
  return t.transpose(-2, -1);
}

// retorch.Size (python/retorch/_size.py, a tuple subclass the package registers at import);
// x.shape and x.size() make its instances as tuples are made, without calling into Python.
PyTypeObject* size_type = nullptr;

py::object sizes_object(IntArrayRef sizes) {
  PyTypeObject* type = size_type ? size_type : &PyTuple_Type;
  PyObject* o = type->tp_alloc(type, Py_ssize_t(sizes.size()));
  if (!o) throw py::error_already_set();
  for (size_t i = 0; i < sizes.size(); ++i) {
    PyObject* v = PyLong_FromLongLong(sizes[i]);
    if (!v) {
      Py_DECREF(o);
      throw py::error_already_set();
    }
    PyTuple_SET_ITEM(o, Py_ssize_t(i), v);
  }
  return py::reinterpret_steal<py::object>(o);
}

// Note [Attributes as getset descriptors]: a pybind11 property runs its getter through the
// function dispatcher (the overload record, argument casters, the return policy): x.dtype took
// 0.11-0.15 us, torch's 0.04. The attributes read most often are CPython getset descriptors on
// the class instead, reading the tensor straight from the instance; C++ errors go through the
// translators pybind11 applies, and the messages are torch's.

// The tensor of a Tensor object; nullptr, with a Python error, for one whose __init__ never ran.
const Tensor* self_tensor(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  if (inst->simple_layout) {
    if (inst->simple_holder_constructed)
      return static_cast<const Tensor*>(inst->simple_value_holder[0]);
  } else {
    auto v_h = inst->get_value_and_holder(nullptr, false);
    if (v_h && v_h.holder_constructed()) return v_h.value_ptr<Tensor>();
  }
  PyErr_SetString(PyExc_RuntimeError, "Tensor: the object was never initialized");
  return nullptr;
}

// f(tensor) as a new reference (a py::object), errors translated.
template <typename F>
PyObject* read_attribute(PyObject* self, const F& f) {
  const Tensor* t = self_tensor(self);
  if (!t) return nullptr;
  try {
    return f(*t).release().ptr();
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

// f(tensor, value) for an assignment (value is nullptr for del), errors translated.
template <typename F>
int write_attribute(PyObject* self, PyObject* value, const F& f) {
  const Tensor* t = self_tensor(self);
  if (!t) return -1;
  try {
    f(const_cast<Tensor&>(*t), value);
    return 0;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return -1;
  }
}

PyGetSetDef kTensorAttributes[] = {
    {"shape",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return sizes_object(t.sizes()); });
     },
     nullptr, nullptr, nullptr},
    {"dtype",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::cast(t.dtype()); });
     },
     nullptr, nullptr, nullptr},
    {"device",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::cast(t.device()); });
     },
     nullptr, nullptr, nullptr},
    {"ndim",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::int_(t.dim()); });
     },
     nullptr, nullptr, nullptr},
    {"is_leaf",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::bool_(t.is_leaf()); });
     },
     nullptr, nullptr, nullptr},
    {"is_cuda",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::bool_(t.is_cuda()); });
     },
     nullptr, nullptr, nullptr},
    {"grad_fn",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::cast(t.grad_fn()); });
     },
     nullptr, nullptr, nullptr},
    {"_version",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::int_(t._version()); });
     },
     nullptr, nullptr, nullptr},
    {"requires_grad",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::bool_(t.requires_grad()); });
     },
     [](PyObject* s, PyObject* v, void*) {
       return write_attribute(s, v, [](Tensor& t, PyObject* v) {
         RT_CHECK(v != nullptr && PyBool_Check(v), "requires_grad must be a bool");
         t.set_requires_grad(v == Py_True);
       });
     },
     nullptr, nullptr},
    {"grad",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) -> py::object {
         const Tensor& g = t.grad();
         return g.defined() ? py::cast(g) : py::none();
       });
     },
     [](PyObject* s, PyObject* v, void*) {  // (del x.grad clears it, as torch's)
       return write_attribute(s, v, [](Tensor& t, PyObject* v) {
         if (v == nullptr || v == Py_None) return t.set_grad(Tensor());
         if (!py::detail::is_bound_instance<Tensor>(v))
           throw py::type_error(std::string("assigned grad expected to be a Tensor or None but "
                                            "got grad of type") +
                                Py_TYPE(v)->tp_name);
         t.set_grad(py::handle(v).cast<Tensor>());
       });
     },
     nullptr, nullptr},
    {"data",
     [](PyObject* s, void*) {
       return read_attribute(s, [](const Tensor& t) { return py::cast(t.detach()); });
     },
     [](PyObject* s, PyObject* v, void*) {
       return write_attribute(s, v, [](Tensor& t, PyObject* v) {
         RT_CHECK(v != nullptr, "Deleting tensor data is not allowed. Delete tensor instead!");
         if (!py::detail::is_bound_instance<Tensor>(v))
           throw py::type_error(std::string("Variable data has to be a tensor, but got ") +
                                Py_TYPE(v)->tp_name);
         t.set_data(py::handle(v).cast<Tensor>());
       });
     },
     nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

void bind_tensor(py::module_& m, py::class_<Tensor>& cls) {
  // Tensor(t) is another handle on t's TensorImpl: nn.Parameter (a Python subclass) and the
  // modules wrapping C++ tensors rely on sharing the impl, grad and version counter included.
  // Each __init__ makes the new object its tensor's object (Note [One Python object per tensor]).
  auto init = [](py::detail::value_and_holder& v_h, Tensor t) {
    t.impl()->set_pyobj(v_h.inst);
    v_h.value_ptr() = new Tensor(std::move(t));
  };
  cls.def("__init__", [init](py::detail::value_and_holder& v_h, const Tensor& t) { init(v_h, t); },
          py::detail::is_new_style_constructor())
      .def("__init__", [init](py::detail::value_and_holder& v_h, bool v) {
            init(v_h, scalar_to_tensor(Scalar(v)));
          }, py::detail::is_new_style_constructor())
      .def("__init__", [init](py::detail::value_and_holder& v_h, int64_t v) {
            init(v_h, scalar_to_tensor(Scalar(v)));
          }, py::detail::is_new_style_constructor())
      .def("__init__", [init](py::detail::value_and_holder& v_h, double v) {
            init(v_h, scalar_to_tensor(Scalar(v)));
          }, py::detail::is_new_style_constructor());
  // ... and its dealloc forgets it, first thing.
  static destructor pybind_dealloc = reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_dealloc;
  reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_dealloc = [](PyObject* self) {
    auto v_h = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder(nullptr, false);
    if (v_h && v_h.holder_constructed()) {
      const Tensor& t = *v_h.value_ptr<Tensor>();
      if (t.defined() && t.impl()->pyobj() == self) t.impl()->set_pyobj(nullptr);
    }
    pybind_dealloc(self);
  };
  py::implicitly_convertible<py::bool_, Tensor>();
  py::implicitly_convertible<py::int_, Tensor>();
  py::implicitly_convertible<py::float_, Tensor>();

  m.def("_set_size_type", [](py::type t) {
    RT_CHECK(PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(t.ptr()), &PyTuple_Type),
             "_set_size_type: expected a tuple subclass");
    size_type = reinterpret_cast<PyTypeObject*>(t.release().ptr());  // kept for good
  });
  // (Note [Attributes as getset descriptors])
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  for (PyGetSetDef* d = kTensorAttributes; d->name; ++d) {
    py::object descriptor = py::reinterpret_steal<py::object>(PyDescr_NewGetSet(type, d));
    if (!descriptor || PyObject_SetAttrString(cls.ptr(), d->name, descriptor.ptr()) != 0)
      throw py::error_already_set();
  }
  cls.def_property_readonly("T", [](const Tensor& t) { return reversed_dims(t, "T"); })
      .def_property_readonly("H", [](const Tensor& t) { return reversed_dims(t, "H"); })
      .def_property_readonly("mT", [](const Tensor& t) { return matrix_transpose(t, "mT"); })
      .def_property_readonly("mH", [](const Tensor& t) { return matrix_transpose(t, "mH"); })
      .def(
          "size",
          [](const Tensor& t, std::optional<int64_t> d) -> py::object {
            if (d) return py::cast(t.size(*d));
            return sizes_object(t.sizes());
          },
          py::arg("dim") = py::none())
      .def(
          "stride",
          [](const Tensor& t, std::optional<int64_t> d) -> py::object {
            if (d) return py::cast(t.stride(*d));
            return py::cast(t.strides());
          },
          py::arg("dim") = py::none())
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_floating_point", &Tensor::is_floating_point)
      .def("data_ptr",
           [](const Tensor& t) -> uintptr_t {
             if (t.device().is_meta()) return 0;  // as in PyTorch: meta tensors have no data
             // The address of element 0 wherever it lives (a device address for cuda tensors in
             // device memory, as torch's), without reading it: the host's data() refuses those.
             return reinterpret_cast<uintptr_t>(element_address(t));
           })
      .def("record_stream", [](const Tensor& t, const Stream& s) { record_stream(t, s); })
      .def("pin_memory", [](const Tensor& t) { return pin_memory(t); })
      .def("is_pinned", [](const Tensor& t) { return is_pinned(t); })
      .def("is_set_to",
           [](const Tensor& a, const Tensor& b) {  // same memory and geometry
             return a.impl()->storage().get() == b.impl()->storage().get() &&
                    a.storage_offset() == b.storage_offset() && a.sizes().equals(b.sizes()) &&
                    a.strides().equals(b.strides());
           })
      .def("item",
           [](const Tensor& t) {
             RT_CHECK_VALUE(t.numel() == 1,
                            "only one element tensors can be converted to Python scalars");
             return t.item();
           })
      .def("tolist", &to_list)
      .def("numpy", [](const Tensor& t) { return to_numpy(t); })
      .def(
          "__array__",
          [](const Tensor& t, py::object dtype) {
            py::array a = to_numpy(t.detach());
            return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
          },
          py::arg("dtype") = py::none())
      .def("cpu", [](const Tensor& t) { return t.to(Device(kCPU)); })
      .def(
          "requires_grad_", [](Tensor& t, bool r) { return t.set_requires_grad(r); },
          py::arg("requires_grad") = true)
      .def("detach_",
           [](Tensor& t) -> Tensor& {
             // torch's detach_: t becomes a leaf that does not require grad, in place.
             AutogradMeta* m = t.impl()->autograd_meta();
             if (!m) return t;
             RT_CHECK(!m->is_view_, "Can't detach views in-place. Use detach() instead.");
             m->grad_fn_.reset();
             m->output_nr_ = 0;
             m->requires_grad_ = false;
             m->retains_grad_ = false;
             return t;
           })
      .def("retain_grad", &Tensor::retain_grad)
      .def_property_readonly("retains_grad", &Tensor::retains_grad)
      .def(
          "backward",
          [](const Tensor& t, std::optional<Tensor> gradient, std::optional<bool> retain_graph,
             bool create_graph, std::optional<std::vector<Tensor>> inputs) {
            t.backward(gradient.value_or(Tensor()), retain_graph, create_graph,
                       inputs ? TensorList(*inputs) : TensorList());
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(),
          py::arg("create_graph") = false, py::arg("inputs") = py::none())
      .def(
          "register_hook",
          [](const Tensor& t, py::function fn) {
            unsigned h = t.register_hook([fn](const Tensor& g) -> Tensor {
              py::gil_scoped_acquire gil;
              py::object r = fn(g);
              return r.is_none() ? Tensor() : r.cast<Tensor>();
            });
            return py::module_::import("retorch._hooks").attr("RemovableHandle")(
                py::cpp_function([t, h]() { t.remove_hook(h); }));
          })
      .def("__repr__", &Tensor::toString)
      .def("__len__",
           [](const Tensor& t) {
             if (t.dim() == 0) throw py::type_error("len() of a 0-d tensor");
             return t.size(0);
           })
      .def("__bool__",
           [](const Tensor& t) {
             RT_CHECK(t.numel() == 1,
                      "Boolean value of Tensor with more than one value is ambiguous");
             return t.item<bool>();
           })
      .def("__float__",
           [](const Tensor& t) {
             RT_CHECK_VALUE(t.numel() == 1,
                            "only one element tensors can be converted to Python scalars");
             return t.item<double>();
           })
      .def("__int__",
           [](const Tensor& t) {
             RT_CHECK_VALUE(t.numel() == 1,
                            "only one element tensors can be converted to Python scalars");
             return t.item<int64_t>();
           })
      .def("__index__",
           [](const Tensor& t) {
             RT_CHECK_TYPE(is_integral_type(t.dtype(), false) && t.numel() == 1,
                           "only integer tensors of a single element can be converted to an index");
             return t.item<int64_t>();
           })
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<intptr_t>(t.impl()); })
      .def("__getitem__", &get_item)
      .def("__setitem__", &set_item)
      .def(
          "__add__", [](const Tensor& a, const Tensor& b) { return a.add(b); }, py::is_operator())
      .def(
          "__radd__", [](const Tensor& a, const Tensor& b) { return b.add(a); }, py::is_operator())
      .def(
          "__iadd__", [](Tensor& a, const Tensor& b) { return a.add_(b); }, py::is_operator())
      .def(
          "__sub__", [](const Tensor& a, const Tensor& b) { return a.sub(b); }, py::is_operator())
      .def(
          "__rsub__", [](const Tensor& a, const Tensor& b) { return b.sub(a); }, py::is_operator())
      .def(
          "__isub__", [](Tensor& a, const Tensor& b) { return a.sub_(b); }, py::is_operator())
      .def(
          "__mul__", [](const Tensor& a, const Tensor& b) { return a.mul(b); }, py::is_operator())
      .def(
          "__rmul__", [](const Tensor& a, const Tensor& b) { return b.mul(a); }, py::is_operator())
      .def(
          "__imul__", [](Tensor& a, const Tensor& b) { return a.mul_(b); }, py::is_operator())
      .def(
          "__truediv__", [](const Tensor& a, const Tensor& b) { return a.div(b); },
          py::is_operator())
      .def(
          "__rtruediv__", [](const Tensor& a, const Tensor& b) { return b.div(a); },
          py::is_operator())
      .def(
          "__itruediv__", [](Tensor& a, const Tensor& b) { return a.div_(b); }, py::is_operator())
      .def(
          "__floordiv__",
          [](const Tensor& a, const Tensor& b) { return a.div(b, std::string_view("floor")); },
          py::is_operator())
      .def(
          "__rfloordiv__",
          [](const Tensor& a, const Tensor& b) { return b.div(a, std::string_view("floor")); },
          py::is_operator())
      .def(
          "__mod__", [](const Tensor& a, const Tensor& b) { return a.remainder(b); },
          py::is_operator())
      .def(
          "__rmod__", [](const Tensor& a, const Tensor& b) { return b.remainder(a); },
          py::is_operator())
      // A Python number exponent takes pow.Tensor_Scalar, as in torch (x ** -1 on integers fails).
      .def(
          "__pow__", [](const Tensor& a, const Scalar& b) { return a.pow(b); }, py::is_operator())
      .def(
          "__pow__", [](const Tensor& a, const Tensor& b) { return a.pow(b); }, py::is_operator())
      .def(
          "__rpow__", [](const Tensor& a, const Tensor& b) { return b.pow(a); }, py::is_operator())
      .def(
          "__matmul__", [](const Tensor& a, const Tensor& b) { return a.matmul(b); },
          py::is_operator())
      .def("__neg__", [](const Tensor& a) { return a.neg(); })
      .def("__abs__", [](const Tensor& a) { return a.abs(); })
      // Bitwise on integers, logical on bool (the same results there), as in torch.
      .def("__invert__", [](const Tensor& a) { return a.bitwise_not(); })
      .def(
          "__and__", [](const Tensor& a, const Tensor& b) { return a.bitwise_and(b); },
          py::is_operator())
      .def(
          "__rand__", [](const Tensor& a, const Tensor& b) { return b.bitwise_and(a); },
          py::is_operator())
      .def(
          "__iand__", [](Tensor& a, const Tensor& b) { return a.bitwise_and_(b); },
          py::is_operator())
      .def(
          "__or__", [](const Tensor& a, const Tensor& b) { return a.bitwise_or(b); },
          py::is_operator())
      .def(
          "__ror__", [](const Tensor& a, const Tensor& b) { return b.bitwise_or(a); },
          py::is_operator())
      .def(
          "__ior__", [](Tensor& a, const Tensor& b) { return a.bitwise_or_(b); }, py::is_operator())
      .def(
          "__xor__", [](const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); },
          py::is_operator())
      .def(
          "__rxor__", [](const Tensor& a, const Tensor& b) { return b.bitwise_xor(a); },
          py::is_operator())
      .def(
          "__ixor__", [](Tensor& a, const Tensor& b) { return a.bitwise_xor_(b); },
          py::is_operator())
      .def(
          "__lshift__", [](const Tensor& a, const Tensor& b) { return a.bitwise_left_shift(b); },
          py::is_operator())
      .def(
          "__rlshift__", [](const Tensor& a, const Tensor& b) { return b.bitwise_left_shift(a); },
          py::is_operator())
      .def(
          "__ilshift__", [](Tensor& a, const Tensor& b) { return a.bitwise_left_shift_(b); },
          py::is_operator())
      .def(
          "__rshift__", [](const Tensor& a, const Tensor& b) { return a.bitwise_right_shift(b); },
          py::is_operator())
      .def(
          "__rrshift__", [](const Tensor& a, const Tensor& b) { return b.bitwise_right_shift(a); },
          py::is_operator())
      .def(
          "__irshift__", [](Tensor& a, const Tensor& b) { return a.bitwise_right_shift_(b); },
          py::is_operator())
      .def(
          "__eq__", [](const Tensor& a, const Tensor& b) { return a.eq(b); }, py::is_operator())
      .def(
          "__ne__", [](const Tensor& a, const Tensor& b) { return a.ne(b); }, py::is_operator())
      .def(
          "__lt__", [](const Tensor& a, const Tensor& b) { return a.lt(b); }, py::is_operator())
      .def(
          "__le__", [](const Tensor& a, const Tensor& b) { return a.le(b); }, py::is_operator())
      .def(
          "__gt__", [](const Tensor& a, const Tensor& b) { return a.gt(b); }, py::is_operator())
      .def(
          "__ge__", [](const Tensor& a, const Tensor& b) { return a.ge(b); }, py::is_operator());

  // The bytes of t's whole storage as a 1-D uint8 tensor at offset 0, sharing it: what
  // Tensor.storage() and untyped_storage() wrap (python/retorch/storage.py).
  m.def("_storage_bytes", [](const Tensor& t) {
    const Storage& s = t.impl()->storage();
    Tensor bytes(make_intrusive<TensorImpl>(s, kByte, t.device()));
    const int64_t n = int64_t(s->nbytes());
    bytes.impl()->set_sizes_and_strides({n}, {1}, 0);
    return bytes;
  });
  m.def("from_numpy", &from_numpy, "Tensor sharing memory with a numpy array");
  m.def("_to_numpy", &to_numpy);
}

}  // namespace retorch::python

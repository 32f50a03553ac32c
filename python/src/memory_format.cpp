// torch.memory_format objects and the memory_format= arguments of is_contiguous, contiguous,
// clone, empty, the *_like factories and Tensor.to (the generated bindings know no memory
// formats).
#include <algorithm>
#include <string>
#include <vector>

#include "python/src/bindings.h"

namespace retorch::python {

namespace {

const char* format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::Preserve: return "preserve_format";
    default: return "contiguous_format";
  }
}

// `result` (a copy of `self`) restrided the way PyTorch's preserve_format lays out copies.
Tensor restride_like(const Tensor& result, const Tensor& self) {
  if (result.is_same(self) || result.sizes() != self.sizes()) return result;
  DimVector want = memory_format_strides(self, MemoryFormat::Preserve);
  if (result.strides().equals(want)) return result;
  return retorch::empty_strided(result.sizes(), want, result.options()).copy_(result);
}

// Tensor.to's arguments, read as torch's three signatures: (device=None, dtype=None,
// non_blocking=False, copy=False), (dtype, non_blocking=False, copy=False) and (other,
// non_blocking=False, copy=False), each with a keyword-only memory_format=preserve_format.
struct ToArgs {
  enum Form { kDevice, kDtype, kOther } form = kDevice;
  std::optional<Device> device;
  std::optional<ScalarType> dtype;
  std::optional<Tensor> other;
  bool non_blocking = false, copy = false;
  MemoryFormat memory_format = MemoryFormat::Preserve;
};

[[noreturn]] void bad_to_args(const py::args& args, const py::kwargs& kwargs) {
  std::string got;
  for (py::handle a : args) got += std::string(got.empty() ? "" : ", ") + Py_TYPE(a.ptr())->tp_name;
  for (auto kv : kwargs)
    got += std::string(got.empty() ? "" : ", ") + py::str(kv.first).cast<std::string>() + "=" +
           Py_TYPE(kv.second.ptr())->tp_name;
  throw py::type_error(
      "to() received an invalid combination of arguments - got (" + got +
      "), but expected one "
      "of:\n * (torch.device device, torch.dtype dtype, bool non_blocking, bool copy, *, "
      "torch.memory_format memory_format)\n * (torch.dtype dtype, bool non_blocking, bool copy, "
      "*, torch.memory_format memory_format)\n * (Tensor tensor, bool non_blocking, bool copy, "
      "*, torch.memory_format memory_format)");
}

template <typename T>
bool load(py::handle h, T& out) {
  py::detail::make_caster<T> c;
  if (!c.load(h, false)) return false;
  out = py::detail::cast_op<T>(c);
  return true;
}

// None, a device or a device string (an invalid string raises the parser's error, as torch's
// RuntimeError), or an int (cuda:<int>).
bool load_device(py::handle h, std::optional<Device>& out) {
  if (h.is_none()) return out.reset(), true;
  if (PyUnicode_Check(h.ptr())) return out = Device(h.cast<std::string>()), true;
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()))
    return out = Device(kCUDA, int8_t(h.cast<int>())), true;
  Device d = kCPU;
  if (!load(h, d)) return false;
  return out = d, true;
}

ToArgs parse_to(const py::args& args, const py::kwargs& kwargs) {
  ToArgs a;
  const size_t n = args.size();
  // The positional slots of the form, after its first argument.
  std::vector<const char*> slots;
  if (n > 0) {
    py::handle first = args[0];
    ScalarType dt;
    if (py::isinstance<Tensor>(first)) {
      a.form = ToArgs::kOther;
      a.other = first.cast<Tensor>();
      slots = {"non_blocking", "copy"};
    } else if (load(first, dt)) {
      a.form = ToArgs::kDtype;
      a.dtype = dt;
      slots = {"non_blocking", "copy"};
    } else if (load_device(first, a.device)) {
      slots = {"dtype", "non_blocking", "copy"};
    } else {
      bad_to_args(args, kwargs);
    }
  }
  if (n > slots.size() + 1) bad_to_args(args, kwargs);
  auto set = [&](const std::string& name, py::handle v) {
    bool ok = false;
    if (name == "non_blocking" || name == "copy") {
      ok = PyBool_Check(v.ptr());
      if (ok) (name == "copy" ? a.copy : a.non_blocking) = v.ptr() == Py_True;
    } else if (name == "dtype" && a.form == ToArgs::kDevice) {
      ScalarType dt;
      ok = v.is_none() || load(v, dt);
      if (ok && !v.is_none()) a.dtype = dt;
    } else if (name == "device" && a.form == ToArgs::kDevice && n == 0) {
      ok = load_device(v, a.device);
    } else if (name == "memory_format") {
      ok = v.is_none() || load(v, a.memory_format);
    }
    if (!ok) bad_to_args(args, kwargs);
  };
  for (size_t i = 1; i < n; ++i) set(slots[i - 1], args[i]);
  for (auto kv : kwargs) {
    const std::string name = py::str(kv.first);
    // A keyword may not repeat a positional argument.
    for (size_t i = 1; i < n; ++i)
      if (name == slots[i - 1]) bad_to_args(args, kwargs);
    set(name, kv.second);
  }
  return a;
}

Tensor call_to(const Tensor& self, const ToArgs& a) {
  switch (a.form) {
    case ToArgs::kDtype:
      return self.to(*a.dtype, a.non_blocking, a.copy);
    case ToArgs::kOther:
      return self.to(*a.other, a.non_blocking, a.copy);
    default:
      return self.to(a.device, a.dtype, a.non_blocking, a.copy);
  }
}

// The dim order in which a dense, non-contiguous tensor (a transposed or channels-last one) is
// contiguous, or empty.
std::vector<int64_t> dense_order(const Tensor& t) {
  if (t.dim() < 2 || t.is_contiguous()) return {};
  std::vector<int64_t> order(size_t(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) order[size_t(d)] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return t.stride(x) > t.stride(y); });
  if (!t.permute(order).is_contiguous()) return {};
  return order;
}

// Tensor.to: the op (to.dtype, to.device or to.other, as called), its result laid out as
// memory_format asks; preserve_format keeps a dense input's strides, copying it once.
Tensor tensor_to(const Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  const ToArgs a = parse_to(args, kwargs);
  if (a.memory_format != MemoryFormat::Preserve) {
    // As torch: nothing to convert and already laid out as asked (by the format it suggests)
    // returns self; else a copy in that format.
    const Tensor out = call_to(self, a);
    if (!out.is_same(self)) return out.contiguous(a.memory_format);
    return self.suggest_memory_format() == a.memory_format ? self : self.clone(a.memory_format);
  }
  if (!self.is_contiguous()) {
    const std::vector<int64_t> order = dense_order(self);
    if (!order.empty()) {
      // Convert the contiguous permuted view, then permute back (restriding a contiguous
      // result would cost a second, strided copy).
      const Tensor src = self.permute(order);
      const Tensor out = call_to(src, a);
      if (out.is_same(src)) return self;
      std::vector<int64_t> inverse(order.size());
      for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
      return out.permute(inverse);
    }
  }
  Tensor out = call_to(self, a);
  return out.is_same(self) ? self : restride_like(out, self);
}

// zeros_like & co.: the op (a contiguous result), laid out as memory_format asks (preserve
// format: as the input), requires_grad set on the final tensor (a leaf).
template <typename Make>
Tensor like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device,
            bool requires_grad, std::optional<MemoryFormat> format, const Make& make) {
  const MemoryFormat f = format.value_or(MemoryFormat::Preserve);
  Tensor out = make(TensorOptions().dtype(dtype).device(device));
  if (f == MemoryFormat::Preserve)
    out = restride_like(out, self);
  else if (f != MemoryFormat::Contiguous)
    out = out.contiguous(f);
  if (requires_grad) out.set_requires_grad(true);
  return out;
}

template <typename Make>
void def_like(py::module_& m, const char* name, const Make& make) {
  py::delattr(m, name);
  m.def(
      name,
      [make](const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device,
             bool requires_grad, std::optional<MemoryFormat> format) {
        return like(self, dtype, device, requires_grad, format,
                    [&](const TensorOptions& o) { return make(self, o); });
      },
      py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      py::arg("memory_format") = MemoryFormat::Preserve);
}

}  // namespace

void bind_memory_format(py::module_& m, py::class_<Tensor>& cls) {
  py::class_<MemoryFormat>(m, "memory_format")
      .def("__repr__", [](MemoryFormat f) { return std::string("torch.") + format_name(f); })
      .def("__str__", [](MemoryFormat f) { return std::string("torch.") + format_name(f); })
      .def("__eq__", [](MemoryFormat a, py::object b) {
        return py::isinstance<MemoryFormat>(b) && a == b.cast<MemoryFormat>();
      })
      .def("__hash__", [](MemoryFormat f) { return int(f); })
      .def("__reduce__", [](MemoryFormat f) { return std::string(format_name(f)); });
  m.attr("contiguous_format") = MemoryFormat::Contiguous;
  m.attr("channels_last") = MemoryFormat::ChannelsLast;
  m.attr("preserve_format") = MemoryFormat::Preserve;

  cls.def("is_contiguous", [](const Tensor& t, MemoryFormat f) { return t.is_contiguous(f); },
          py::arg("memory_format") = MemoryFormat::Contiguous);
  cls.def("contiguous", [](const Tensor& t, MemoryFormat f) { return t.contiguous(f); },
          py::kw_only(), py::arg("memory_format"));
  cls.def("_suggest_memory_format", &Tensor::suggest_memory_format);
  // torch's clone and empty_like default to preserve_format: replace the generated bindings.
  auto clone = [](const Tensor& t, MemoryFormat f) { return t.clone(f); };
  py::delattr(cls, "clone");
  cls.def("clone", clone, py::kw_only(), py::arg("memory_format") = MemoryFormat::Preserve);
  py::delattr(m, "clone");
  m.def("clone", clone, py::arg("input"), py::kw_only(),
        py::arg("memory_format") = MemoryFormat::Preserve);
  py::delattr(m, "empty_like");
  m.def("empty_like", [](const Tensor& self, std::optional<ScalarType> dtype,
                         std::optional<Device> device, bool requires_grad, MemoryFormat f) {
        return empty_like(self, TensorOptions().dtype(dtype).device(device)
                                    .requires_grad(requires_grad), f);
      }, py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      py::arg("memory_format") = MemoryFormat::Preserve);
  // empty(..., memory_format=) as extra overloads; the generated ones take the common calls.
  auto empty_mf = [](IntArrayRef size, std::optional<ScalarType> dtype,
                     std::optional<Device> device, bool requires_grad, MemoryFormat f) {
    return empty(size, TensorOptions().dtype(dtype).device(device).requires_grad(requires_grad),
                 f);
  };
  m.def("empty", empty_mf, py::arg("size"), py::kw_only(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false,
        py::arg("memory_format"));
  m.def("empty", [empty_mf](py::args sizes, std::optional<ScalarType> dtype,
                            py::object device, bool requires_grad, MemoryFormat f) {
        auto ints = pyargs_to_ints(sizes);
        return empty_mf(IntArrayRef(ints), dtype, optional_device(device), requires_grad, f);
      }, py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false, py::arg("memory_format"));
  m.def("_restride_like", &restride_like);
  // torch's *_like factories default to preserve_format (the generated ones make contiguous).
  def_like(m, "zeros_like",
           [](const Tensor& t, const TensorOptions& o) { return zeros_like(t, o); });
  def_like(m, "ones_like", [](const Tensor& t, const TensorOptions& o) { return ones_like(t, o); });
  def_like(m, "rand_like", [](const Tensor& t, const TensorOptions& o) { return rand_like(t, o); });
  def_like(m, "randn_like",
           [](const Tensor& t, const TensorOptions& o) { return randn_like(t, o); });
  // x.new_zeros(*size) & co.: x's dtype and device unless given.
  auto new_like = [](auto make) {
    return [make](const Tensor& self, const py::args& size, std::optional<ScalarType> dtype,
                  std::optional<Device> device, bool requires_grad) {
      const std::vector<int64_t> sizes = pyargs_to_ints(size);
      return make(IntArrayRef(sizes), TensorOptions()
                                          .dtype(dtype.value_or(self.dtype()))
                                          .device(device.value_or(self.device()))
                                          .requires_grad(requires_grad));
    };
  };
  for (auto [name, fn] :
       {std::pair{"new_zeros", +[](IntArrayRef s, const TensorOptions&o) { return zeros(s, o); }},
        std::pair{"new_ones", +[](IntArrayRef s, const TensorOptions&o) { return ones(s, o); }},
        std::pair{"new_empty", +[](IntArrayRef s, const TensorOptions&o) { return empty(s, o); }}})
    cls.def(name, new_like(fn), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
            py::arg("requires_grad") = false);
  cls.def(
      "new_full",
      [](const Tensor& self, IntArrayRef size, const Scalar& fill_value,
         std::optional<ScalarType> dtype, std::optional<Device> device, bool requires_grad) {
        return full(size, fill_value,
                    TensorOptions()
                        .dtype(dtype.value_or(self.dtype()))
                        .device(device.value_or(self.device()))
                        .requires_grad(requires_grad));
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  py::delattr(m, "full_like");
  m.def(
      "full_like",
      [](const Tensor& self, const Scalar& fill_value, std::optional<ScalarType> dtype,
         std::optional<Device> device, bool requires_grad, std::optional<MemoryFormat> format) {
        return like(self, dtype, device, requires_grad, format,
                    [&](const TensorOptions& o) { return full_like(self, fill_value, o); });
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      py::arg("memory_format") = MemoryFormat::Preserve);
  py::delattr(cls, "to");
  cls.def("to", &tensor_to);
}

}  // namespace retorch::python

// torch.memory_format objects and the memory_format= arguments of is_contiguous, contiguous,
// clone, empty and empty_like (the generated bindings know no memory formats).
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
}

}  // namespace retorch::python

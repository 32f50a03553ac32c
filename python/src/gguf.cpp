// retorch._C._gguf: GGUF files for Python (wrapped by retorch/gguf.py).
#include "retorch/io/Gguf.h"

#include "python/src/bindings.h"

namespace retorch::python {

namespace {

// GGUF strings are bytes; they become str when they are UTF-8 (they nearly always are) and stay
// bytes otherwise, so nothing is lost.
py::object string_to_python(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "strict");
  if (o) return py::reinterpret_steal<py::object>(o);
  PyErr_Clear();
  return py::bytes(s);
}

py::object value_to_python(const io::GgufValue& v) {
  using io::GgufType;
  if (v.is_string()) return string_to_python(v.to_string());
  if (v.is_bool()) return py::bool_(v.to_bool());
  if (v.is_float()) return py::float_(v.to_float());
  if (v.is_integer()) {
    if (v.type() == GgufType::kUint64) return py::int_(v.to_uint());
    return py::int_(v.to_int());
  }
  py::list out;
  if (v.elem_type() == GgufType::kString) {
    for (const std::string& s : v.to_string_array()) out.append(string_to_python(s));
  } else {
    for (size_t i = 0; i < v.size(); ++i) out.append(value_to_python(v.at(i)));
  }
  return out;
}

}  // namespace

void bind_gguf(py::module_& m) {
  py::module_ g = m.def_submodule("_gguf", "GGUF files (see retorch.gguf)");
  g.def(
      "load",
      [](const std::string& path) {
        std::shared_ptr<io::GgufFile> f;
        {
          py::gil_scoped_release no_gil;
          f = io::GgufFile::open(path);
        }
        py::dict metadata;
        for (const std::string& key : f->keys())
          metadata[string_to_python(key)] = value_to_python(f->get(key));
        py::dict tensors;
        for (const io::GgufTensorInfo& t : f->tensors())
          tensors[string_to_python(t.name)] =
              py::make_tuple(f->tensor(t), t.type, py::tuple(py::cast(t.shape())));
        py::dict info;
        info["version"] = f->version();
        info["alignment"] = f->alignment();
        info["data_offset"] = f->data_offset();
        return py::make_tuple(metadata, tensors, info);
      },
      py::arg("path"),
      "(metadata {key: value}, tensors {name: (tensor, ggml type id, row-major shape)}, "
      "{version, alignment, data_offset}) of a GGUF file");
  g.def("type_name", &io::ggml_type_name, py::arg("type"), "ggml's name of a type id");
}

}  // namespace retorch::python

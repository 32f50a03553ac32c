// retorch._C._io: safetensors files and in-memory buffers for Python (wrapped by retorch/io.py
// and retorch/serialization.py).
#include "python/src/bindings.h"
#include "retorch/io/Safetensors.h"

namespace retorch::python {

namespace {

OrderedDict<Tensor> tensor_dict(const py::dict& tensors, const char* caller) {
  OrderedDict<Tensor> dict("tensor");
  for (auto item : tensors) {
    RT_CHECK_TYPE(py::isinstance<py::str>(item.first), caller, ": keys must be str, got ",
                  std::string(py::str(py::type::of(item.first))));
    RT_CHECK_TYPE(py::isinstance<Tensor>(item.second), caller, ": value of '",
                  item.first.cast<std::string>(), "' is not a retorch.Tensor");
    dict.insert(item.first.cast<std::string>(), item.second.cast<Tensor>());
  }
  return dict;
}

py::dict tensors_to_python(const io::SafetensorsFile& file) {
  py::dict tensors;
  for (const auto& item : file.tensors) tensors[py::str(item.key)] = py::cast(item.value);
  return tensors;
}

py::tuple to_python(const io::SafetensorsFile& file) {
  return py::make_tuple(tensors_to_python(file), py::cast(file.metadata));
}

}  // namespace

void bind_io(py::module_& m) {
  py::module_ io = m.def_submodule("_io", "safetensors files (see retorch.io)");
  io.def(
      "save_file",
      [](const py::dict& tensors, const std::string& path,
         const std::optional<io::Metadata>& metadata) {
        OrderedDict<Tensor> dict = tensor_dict(tensors, "save_file");
        io::Metadata meta = metadata.value_or(io::Metadata{});
        py::gil_scoped_release no_gil;
        io::save_safetensors(path, dict, meta);
      },
      py::arg("tensors"), py::arg("filename"), py::arg("metadata") = py::none());
  io.def(
      "load_file",
      [](const std::string& path) {
        io::SafetensorsFile file;
        {
          py::gil_scoped_release no_gil;
          file = io::load_safetensors_file(path);
        }
        return tensors_to_python(file);
      },
      py::arg("filename"));
  io.def(
      "load_metadata",
      [](const std::string& path) {
        py::gil_scoped_release no_gil;
        return io::load_safetensors_metadata(path);
      },
      py::arg("filename"));
  io.def(
      "read",
      [](const std::string& path) {
        io::SafetensorsFile file;
        {
          py::gil_scoped_release no_gil;
          file = io::load_safetensors_file(path);
        }
        return to_python(file);
      },
      py::arg("filename"), "(tensors, metadata) of a safetensors file");
  io.def(
      "to_bytes",
      [](const py::dict& tensors, const std::optional<io::Metadata>& metadata) {
        OrderedDict<Tensor> dict = tensor_dict(tensors, "save");
        io::Metadata meta = metadata.value_or(io::Metadata{});
        std::string bytes;
        {
          py::gil_scoped_release no_gil;
          bytes = io::save_safetensors_bytes(dict, meta);
        }
        return py::bytes(bytes);
      },
      py::arg("tensors"), py::arg("metadata") = py::none(), "the bytes of a safetensors file");
  io.def(
      "from_bytes",
      [](const py::buffer& data, const std::string& name) {
        py::buffer_info info = data.request();
        RT_CHECK_TYPE(info.ndim <= 1 && (info.ndim == 0 || info.strides[0] == info.itemsize),
                      "load: expected a contiguous bytes-like object");
        io::SafetensorsFile file;
        {
          // The caller's reference keeps the buffer alive while the GIL is released.
          py::gil_scoped_release no_gil;
          file = io::load_safetensors_bytes(static_cast<const uint8_t*>(info.ptr),
                                            size_t(info.size * info.itemsize), name);
        }
        return to_python(file);
      },
      py::arg("data"), py::arg("name") = "<bytes>",
      "(tensors, metadata) parsed from the bytes of a safetensors file");
}

}  // namespace retorch::python

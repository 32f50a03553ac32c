// retorch._C._io: safetensors save/load for Python (wrapped by retorch/io.py).
#include "python/src/bindings.h"
#include "retorch/io/Safetensors.h"

namespace retorch::python {

void bind_io(py::module_& m) {
  py::module_ io = m.def_submodule("_io", "safetensors files (see retorch.io)");
  io.def(
      "save_file",
      [](const py::dict& tensors, const std::string& path,
         const std::optional<std::map<std::string, std::string>>& metadata) {
        OrderedDict<Tensor> dict("tensor");
        for (auto item : tensors) {
          RT_CHECK_TYPE(py::isinstance<py::str>(item.first), "save_file: keys must be str, got ",
                        std::string(py::str(py::type::of(item.first))));
          RT_CHECK_TYPE(py::isinstance<Tensor>(item.second), "save_file: value of '",
                        item.first.cast<std::string>(), "' is not a retorch.Tensor");
          dict.insert(item.first.cast<std::string>(), item.second.cast<Tensor>());
        }
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
        py::dict out;
        for (const auto& item : file.tensors) out[py::str(item.key)] = py::cast(item.value);
        return out;
      },
      py::arg("filename"));
  io.def(
      "load_metadata",
      [](const std::string& path) {
        py::gil_scoped_release no_gil;
        return io::load_safetensors_metadata(path);
      },
      py::arg("filename"));
}

}  // namespace retorch::python

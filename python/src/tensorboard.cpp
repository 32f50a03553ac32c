// Binds retorch::utils::tensorboard::SummaryWriter as retorch._C._tensorboard.SummaryWriter.
#include "python/src/bindings.h"
#include "retorch/utils/tensorboard/SummaryWriter.h"

namespace retorch::python {

namespace {

using utils::tensorboard::HistogramBins;
using utils::tensorboard::SummaryWriter;
using utils::tensorboard::SummaryWriterOptions;

// bins: "tensorflow", an int count, or a sequence of edges (numpy's other string rules are not
// implemented and say so).
HistogramBins parse_bins(const py::object& bins) {
  if (py::isinstance<py::str>(bins)) {
    auto s = bins.cast<std::string>();
    RT_CHECK_VALUE(s == "tensorflow", "add_histogram: bins='", s,
                   "' is not supported; use 'tensorflow', an int, or a list of edges");
    return HistogramBins::tensorflow();
  }
  if (py::isinstance<py::bool_>(bins))
    RT_ERROR_KIND(ErrorKind::kType, "add_histogram: bins is a bool");
  if (py::isinstance<py::int_>(bins)) return HistogramBins::bins(bins.cast<int64_t>());
  return HistogramBins::explicit_edges(bins.cast<std::vector<double>>());
}

}  // namespace

void bind_tensorboard(py::module_& m) {
  py::module_ tb = m.def_submodule("_tensorboard", "TensorBoard event-file writer");
  py::class_<SummaryWriter>(tb, "SummaryWriter")
      .def(py::init([](const std::string& log_dir, const std::string& comment, int max_queue,
                       double flush_secs, const std::string& filename_suffix) {
             SummaryWriterOptions o;
             o.comment = comment;
             o.max_queue = max_queue;
             o.flush_secs = flush_secs;
             o.filename_suffix = filename_suffix;
             return std::make_unique<SummaryWriter>(log_dir, o);
           }),
           py::arg("log_dir") = "", py::arg("comment") = "", py::arg("max_queue") = 10,
           py::arg("flush_secs") = 120.0, py::arg("filename_suffix") = "")
      .def("add_scalar", &SummaryWriter::add_scalar, py::arg("tag"), py::arg("value"),
           py::arg("step") = 0, py::arg("walltime") = py::none())
      .def("add_scalars", &SummaryWriter::add_scalars, py::arg("main_tag"), py::arg("values"),
           py::arg("step") = 0, py::arg("walltime") = py::none())
      .def(
          "add_histogram",
          [](SummaryWriter& w, const std::string& tag, const Tensor& values, int64_t step,
             const py::object& bins, std::optional<double> walltime) {
            w.add_histogram(tag, values, step, parse_bins(bins), walltime);
          },
          py::arg("tag"), py::arg("values"), py::arg("step") = 0, py::arg("bins") = "tensorflow",
          py::arg("walltime") = py::none())
      .def("add_text", &SummaryWriter::add_text, py::arg("tag"), py::arg("text"),
           py::arg("step") = 0, py::arg("walltime") = py::none())
      .def("flush", &SummaryWriter::flush)
      .def("close", &SummaryWriter::close)
      .def_property_readonly("log_dir", &SummaryWriter::log_dir)
      .def("file_path", &SummaryWriter::file_path)
      .def("scalars_file_paths", &SummaryWriter::scalars_file_paths);
  tb.def("default_log_dir", &utils::tensorboard::default_log_dir, py::arg("comment") = "");
}

}  // namespace retorch::python
